# SPDX-License-Identifier: ISC
# scripts/check-docs (run by make lint), on fixture docs of its own: each
# kind of stale name it must catch, and a control it must pass.
TESTS += tests/unit/docs_check.bats
