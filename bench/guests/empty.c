/* SPDX-License-Identifier: ISC */
/* The empty guest: runtime start-up and exit, nothing else. Its boot time
 * beyond /bin/true is the monitor's and the runtime's fixed cost per guest. */
int main(int argc, char **argv);
int main(int argc, char **argv)
{
	return 0;
}
