/* SPDX-License-Identifier: ISC */
/*
 * libcloak-pkcs11.so: a PKCS#11 module whose token is a cloak guest
 * (services/pkcs11, docs/pkcs11.md). Every call goes to the token guest
 * over the socket named by CLOAK_PKCS11_SOCKET, or without it the user's
 * own token's, $XDG_RUNTIME_DIR/cloak-pkcs11/token.sock (read at
 * C_Initialize);
 * this module holds no key, no PIN and no object, only the lock that
 * serialises its calls (CKF_OS_LOCKING_OK) and the random application id
 * under which the token keeps this process's login and sessions. A child
 * after fork() must call C_Initialize again (PKCS#11 says so): it then
 * gets an id of its own, and every other call in it answers
 * CKR_CRYPTOKI_NOT_INITIALIZED until it does. A C_SignInit,
 * C_EncryptInit or C_DecryptInit the token accepted before may travel
 * with the C_Sign, C_Encrypt or C_Decrypt after it (init_memo.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rpc.h"
#include "init_memo.h"

#define EXPORT __attribute__((visibility("default")))
#define SLOT_ID 0

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialized;
static pid_t owner;
static uint8_t app[P11_APP_ID];
static char *sock;
static struct rpc call;

static CK_FUNCTION_LIST functions;

/* The token's socket: CLOAK_PKCS11_SOCKET, else the one the systemd user
 * unit cloak-pkcs11.socket listens on, so that programs that find this
 * module through p11-kit reach the user's token with nothing set; NULL
 * when neither can be named. */
static char *token_socket(void)
{
	const char *s = getenv("CLOAK_PKCS11_SOCKET"), *run = getenv("XDG_RUNTIME_DIR");
	if (s)
		return strdup(s);
	if (!run || run[0] != '/')
		return NULL;
	static const char tail[] = "/cloak-pkcs11/token.sock";
	size_t n = strlen(run);
	char *p = malloc(n + sizeof tail);
	if (p) {
		memcpy(p, run, n);
		memcpy(p + n, tail, sizeof tail);
	}
	return p;
}

static void pad(unsigned char *dst, size_t n, const char *s)
{
	size_t len = strlen(s);
	memset(dst, ' ', n);
	memcpy(dst, s, len < n ? len : n);
}

/* Takes the lock; CKR_OK if the module is initialized in this process. */
static CK_RV enter(void)
{
	pthread_mutex_lock(&lock);
	if (initialized && owner == getpid())
		return CKR_OK;
	pthread_mutex_unlock(&lock);
	return CKR_CRYPTOKI_NOT_INITIALIZED;
}

static CK_RV leave(CK_RV rv)
{
	rpc_wipe(&call);
	pthread_mutex_unlock(&lock);
	return rv;
}

/* enter(), then a call's own checks: CKR_SLOT_ID_INVALID unless slot_ok
 * (the slot it names is ours), CKR_ARGUMENTS_BAD unless args_ok (its
 * pointers and lengths are usable); the lock is let go again on any. */
static CK_RV enter_call(bool slot_ok, bool args_ok)
{
	CK_RV rv = enter();
	if (rv != CKR_OK)
		return rv;
	return !slot_ok ? leave(CKR_SLOT_ID_INVALID) : !args_ok ? leave(CKR_ARGUMENTS_BAD) : CKR_OK;
}

/* What opens the C_ functions: ENTER(args_ok), or ENTER_SLOT(slot,
 * args_ok) for those that name a slot, returns enter_call's error. */
#define RETURN_ON_ERROR(expr)            \
	do {                             \
		CK_RV rv_ = (expr);      \
		if (rv_ != CKR_OK)       \
			return rv_;      \
	} while (0)
#define ENTER(args_ok) RETURN_ON_ERROR(enter_call(true, args_ok))
#define ENTER_SLOT(slot, args_ok) RETURN_ON_ERROR(enter_call((slot) == SLOT_ID, args_ok))

static void begin(enum p11_op op)
{
	rpc_begin(&call, op, app);
}

/* A request whose first argument is session s. */
static void begin_session(enum p11_op op, CK_SESSION_HANDLE s)
{
	begin(op);
	wire_put_u64(&call.w, s);
}

/* Sends the request; CKR_OK or the token's error. */
static CK_RV send_call(void)
{
	return rpc_call(&call, sock);
}

/* Sends a request that has no results: CKR_OK or the error. */
static CK_RV no_results(void)
{
	CK_RV rv = send_call();
	return rv == CKR_OK ? rpc_end(&call, rv) : rv;
}

/* A call with no results, to its end. */
static CK_RV simple(void)
{
	return leave(no_results());
}

/* A fork while another thread is inside a call must not leave the
 * child's copy of the lock held: fork waits for the call to end. (glibc
 * drops these handlers if the module is unloaded.) */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

EXPORT CK_RV C_Initialize(CK_VOID_PTR args)
{
	if (args) {
		CK_C_INITIALIZE_ARGS *a = args;
		if (a->pReserved)
			return CKR_ARGUMENTS_BAD;
		bool some = a->CreateMutex || a->DestroyMutex || a->LockMutex || a->UnlockMutex;
		bool all = a->CreateMutex && a->DestroyMutex && a->LockMutex && a->UnlockMutex;
		if (some && !all)
			return CKR_ARGUMENTS_BAD;
		/* The caller's mutexes only: we lock with pthreads or not at all. */
		if (all && !(a->flags & CKF_OS_LOCKING_OK))
			return CKR_CANT_LOCK;
	}
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&lock);
	CK_RV rv = CKR_OK;
	if (initialized && owner == getpid()) {
		rv = CKR_CRYPTOKI_ALREADY_INITIALIZED;
	} else {
		/* New, or a child after fork: a new application. The parent's
		 * id and sessions are the parent's. */
		rpc_disconnect();
		free(sock);
		sock = token_socket();
		if (getrandom(app, sizeof app, 0) != sizeof app)
			rv = CKR_FUNCTION_FAILED;
		init_memo_clear();
		initialized = rv == CKR_OK;
		owner = getpid();
	}
	pthread_mutex_unlock(&lock);
	return rv;
}

EXPORT CK_RV C_Finalize(CK_VOID_PTR reserved)
{
	if (reserved)
		return CKR_ARGUMENTS_BAD;
	ENTER(true);
	begin(P11_OP_FINALIZE);
	send_call(); /* the token forgets us; unreachable, it will in time */
	initialized = false;
	rpc_disconnect();
	init_memo_clear();
	free(sock);
	sock = NULL;
	explicit_bzero(app, sizeof app);
	return leave(CKR_OK);
}

EXPORT CK_RV C_GetInfo(CK_INFO_PTR info)
{
	ENTER(info);
	memset(info, 0, sizeof *info);
	info->cryptokiVersion.major = 2;
	info->cryptokiVersion.minor = 40;
	pad(info->manufacturerID, sizeof info->manufacturerID, "cloak");
	pad(info->libraryDescription, sizeof info->libraryDescription, "cloak guest token");
	info->libraryVersion.major = 0;
	info->libraryVersion.minor = 1;
	return leave(CKR_OK);
}

EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list)
{
	if (!list)
		return CKR_ARGUMENTS_BAD;
	*list = &functions;
	return CKR_OK;
}

/* True if the token answers. Called locked. */
static bool present(void)
{
	begin(P11_OP_PING);
	if (send_call() != CKR_OK)
		return false;
	uint32_t yes = wire_get_u32(&call.r);
	return rpc_end(&call, CKR_OK) == CKR_OK && yes == 1;
}

EXPORT CK_RV C_GetSlotList(CK_BBOOL token_present, CK_SLOT_ID_PTR list, CK_ULONG_PTR count)
{
	ENTER(count);
	CK_ULONG n = !token_present || present() ? 1 : 0;
	CK_RV rv = CKR_OK;
	if (list && *count < n)
		rv = CKR_BUFFER_TOO_SMALL;
	else if (list && n)
		list[0] = SLOT_ID;
	*count = n;
	return leave(rv);
}

EXPORT CK_RV C_GetSlotInfo(CK_SLOT_ID slot, CK_SLOT_INFO_PTR info)
{
	ENTER_SLOT(slot, info);
	memset(info, 0, sizeof *info);
	pad(info->slotDescription, sizeof info->slotDescription, "cloak guest token");
	pad(info->manufacturerID, sizeof info->manufacturerID, "cloak");
	info->flags = (present() ? CKF_TOKEN_PRESENT : 0) | CKF_REMOVABLE_DEVICE;
	return leave(CKR_OK);
}

EXPORT CK_RV C_GetTokenInfo(CK_SLOT_ID slot, CK_TOKEN_INFO_PTR info)
{
	ENTER_SLOT(slot, info);
	begin(P11_OP_TOKEN_INFO);
	CK_RV rv = send_call();
	if (rv == CKR_DEVICE_ERROR)
		return leave(CKR_TOKEN_NOT_PRESENT);
	if (rv != CKR_OK)
		return leave(rv);
	const uint8_t *label = wire_get_raw(&call.r, P11_LABEL);
	const uint8_t *serial = wire_get_raw(&call.r, P11_SERIAL);
	CK_FLAGS flags = wire_get_u64(&call.r);
	uint32_t sessions = wire_get_u32(&call.r), rw = wire_get_u32(&call.r);
	if ((rv = rpc_end(&call, rv)) != CKR_OK)
		return leave(rv);
	memset(info, 0, sizeof *info);
	memcpy(info->label, label, P11_LABEL);
	memcpy(info->serialNumber, serial, P11_SERIAL);
	pad(info->manufacturerID, sizeof info->manufacturerID, "cloak");
	pad(info->model, sizeof info->model, "guest token");
	info->flags = flags;
	info->ulMaxSessionCount = info->ulMaxRwSessionCount = CK_EFFECTIVELY_INFINITE;
	info->ulSessionCount = sessions;
	info->ulRwSessionCount = rw;
	info->ulMaxPinLen = P11_PIN_MAX;
	info->ulMinPinLen = P11_PIN_MIN;
	info->ulTotalPublicMemory = info->ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
	info->ulTotalPrivateMemory = info->ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
	info->firmwareVersion.minor = info->hardwareVersion.minor = 1;
	pad(info->utcTime, sizeof info->utcTime, "");
	return leave(CKR_OK);
}

EXPORT CK_RV C_GetMechanismList(CK_SLOT_ID slot, CK_MECHANISM_TYPE_PTR list, CK_ULONG_PTR count)
{
	ENTER_SLOT(slot, count);
	begin(P11_OP_MECH_LIST);
	CK_RV rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	uint32_t n = wire_get_u32(&call.r);
	if (n > 64)
		return leave(CKR_DEVICE_ERROR);
	CK_MECHANISM_TYPE m[64];
	for (uint32_t i = 0; i < n; i++)
		m[i] = wire_get_u64(&call.r);
	if ((rv = rpc_end(&call, rv)) != CKR_OK)
		return leave(rv);
	if (list && *count < n)
		rv = CKR_BUFFER_TOO_SMALL;
	else if (list)
		memcpy(list, m, n * sizeof m[0]);
	*count = n;
	return leave(rv);
}

EXPORT CK_RV C_GetMechanismInfo(CK_SLOT_ID slot, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR info)
{
	ENTER_SLOT(slot, info);
	begin(P11_OP_MECH_INFO);
	wire_put_u64(&call.w, type);
	CK_RV rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	info->ulMinKeySize = wire_get_u64(&call.r);
	info->ulMaxKeySize = wire_get_u64(&call.r);
	info->flags = wire_get_u64(&call.r);
	return leave(rpc_end(&call, rv));
}

EXPORT CK_RV C_InitToken(CK_SLOT_ID slot, CK_UTF8CHAR_PTR pin, CK_ULONG len, CK_UTF8CHAR_PTR label)
{
	ENTER_SLOT(slot, label && (pin || !len));
	if (!pin) /* a protected authentication path: we have none */
		return leave(CKR_ARGUMENTS_BAD);
	if (len > P11_PIN_MAX)
		return leave(CKR_PIN_LEN_RANGE);
	begin(P11_OP_INIT_TOKEN);
	wire_put_string(&call.w, pin, len);
	wire_put_raw(&call.w, label, P11_LABEL);
	init_memo_clear();
	return simple();
}

/* A PIN argument: NULL (protected authentication path) is refused. */
static CK_RV put_pin(CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	if (!pin)
		return CKR_ARGUMENTS_BAD;
	if (len > P11_PIN_MAX)
		return CKR_PIN_LEN_RANGE;
	wire_put_string(&call.w, pin, len);
	return CKR_OK;
}

EXPORT CK_RV C_InitPIN(CK_SESSION_HANDLE s, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	ENTER(true);
	begin_session(P11_OP_INIT_PIN, s);
	CK_RV rv = put_pin(pin, len);
	return rv != CKR_OK ? leave(rv) : simple();
}

EXPORT CK_RV C_SetPIN(CK_SESSION_HANDLE s, CK_UTF8CHAR_PTR old, CK_ULONG olen, CK_UTF8CHAR_PTR new,
		      CK_ULONG nlen)
{
	ENTER(true);
	begin_session(P11_OP_SET_PIN, s);
	CK_RV rv = put_pin(old, olen);
	if (rv == CKR_OK)
		rv = put_pin(new, nlen);
	return rv != CKR_OK ? leave(rv) : simple();
}

/* Sends the request and reads its result, a handle (a session's or an
 * object's), into *out; to the call's end. */
static CK_RV handle_result(CK_ULONG_PTR out)
{
	CK_RV rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	CK_ULONG h = wire_get_u64(&call.r);
	if ((rv = rpc_end(&call, rv)) == CKR_OK)
		*out = h;
	return leave(rv);
}

EXPORT CK_RV C_OpenSession(CK_SLOT_ID slot, CK_FLAGS flags, CK_VOID_PTR app_arg, CK_NOTIFY notify,
			   CK_SESSION_HANDLE_PTR s)
{
	ENTER_SLOT(slot, s);
	begin(P11_OP_OPEN_SESSION);
	wire_put_u64(&call.w, flags);
	return handle_result(s);
}

/* Calls whose only argument is a session. */
static CK_RV session_call(enum p11_op op, CK_SESSION_HANDLE s)
{
	ENTER(true);
	begin_session(op, s);
	return simple();
}

EXPORT CK_RV C_CloseSession(CK_SESSION_HANDLE s)
{
	ENTER(true);
	init_memo_drop(s);
	begin_session(P11_OP_CLOSE_SESSION, s);
	return simple();
}

EXPORT CK_RV C_CloseAllSessions(CK_SLOT_ID slot)
{
	ENTER_SLOT(slot, true);
	begin(P11_OP_CLOSE_ALL);
	init_memo_clear();
	return simple();
}

EXPORT CK_RV C_GetSessionInfo(CK_SESSION_HANDLE s, CK_SESSION_INFO_PTR info)
{
	ENTER(info);
	begin_session(P11_OP_SESSION_INFO, s);
	CK_RV rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	info->slotID = SLOT_ID;
	info->state = wire_get_u64(&call.r);
	info->flags = wire_get_u64(&call.r);
	info->ulDeviceError = 0;
	return leave(rpc_end(&call, rv));
}

EXPORT CK_RV C_Login(CK_SESSION_HANDLE s, CK_USER_TYPE who, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	ENTER(true);
	begin_session(P11_OP_LOGIN, s);
	wire_put_u64(&call.w, who);
	CK_RV rv = put_pin(pin, len);
	return rv != CKR_OK ? leave(rv) : simple();
}

EXPORT CK_RV C_Logout(CK_SESSION_HANDLE s)
{
	ENTER(true);
	init_memo_clear(); /* the token ends the sessions' operations */
	begin_session(P11_OP_LOGOUT, s);
	return simple();
}

/* A template argument. */
static CK_RV put_template(CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
	if (!t && n)
		return CKR_ARGUMENTS_BAD;
	if (n > P11_ATTRS_MAX)
		return CKR_TEMPLATE_INCONSISTENT;
	for (CK_ULONG i = 0; i < n; i++)
		if (t[i].ulValueLen > P11_ATTR_VALUE_MAX)
			return CKR_ATTRIBUTE_VALUE_INVALID;
	p11_put_template(&call.w, t, n);
	return call.w.bad ? CKR_ARGUMENTS_BAD : CKR_OK;
}

EXPORT CK_RV C_CreateObject(CK_SESSION_HANDLE s, CK_ATTRIBUTE_PTR t, CK_ULONG n, CK_OBJECT_HANDLE_PTR o)
{
	ENTER(o);
	begin_session(P11_OP_CREATE_OBJECT, s);
	CK_RV rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : handle_result(o);
}

EXPORT CK_RV C_DestroyObject(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o)
{
	ENTER(true);
	init_memo_unsure();
	begin_session(P11_OP_DESTROY_OBJECT, s);
	wire_put_u64(&call.w, o);
	return simple();
}

EXPORT CK_RV C_GetAttributeValue(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o, CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
	ENTER((t || !n) && n <= P11_ATTRS_MAX);
	begin_session(P11_OP_GET_ATTRS, s);
	wire_put_u64(&call.w, o);
	wire_put_u32(&call.w, (uint32_t)n);
	for (CK_ULONG i = 0; i < n; i++) {
		wire_put_u64(&call.w, t[i].type);
		wire_put_u64(&call.w, t[i].pValue ? t[i].ulValueLen : P11_NO_BUFFER);
	}
	CK_RV rv = send_call();
	if (rv != CKR_OK && rv != CKR_ATTRIBUTE_SENSITIVE && rv != CKR_ATTRIBUTE_TYPE_INVALID &&
	    rv != CKR_BUFFER_TOO_SMALL)
		return leave(rv);
	if (wire_get_u32(&call.r) != n)
		return leave(CKR_DEVICE_ERROR);
	for (CK_ULONG i = 0; i < n; i++) {
		uint64_t vlen = wire_get_u64(&call.r);
		struct wire_bytes v = p11_get_bytes(&call.r, P11_BODY_MAX);
		if (call.r.bad)
			break;
		/* Bytes only where the caller had room for exactly vlen. */
		if (v.len && (!t[i].pValue || v.len != vlen || v.len > t[i].ulValueLen))
			return leave(CKR_DEVICE_ERROR);
		if (v.len)
			memcpy(t[i].pValue, v.p, v.len);
		t[i].ulValueLen = vlen;
	}
	return leave(rpc_end(&call, rv));
}

EXPORT CK_RV C_SetAttributeValue(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o, CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
	ENTER(true);
	init_memo_unsure();
	begin_session(P11_OP_SET_ATTRS, s);
	wire_put_u64(&call.w, o);
	CK_RV rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : simple();
}

EXPORT CK_RV C_FindObjectsInit(CK_SESSION_HANDLE s, CK_ATTRIBUTE_PTR t, CK_ULONG n)
{
	ENTER(true);
	begin_session(P11_OP_FIND_INIT, s);
	CK_RV rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : simple();
}

EXPORT CK_RV C_FindObjects(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE_PTR out, CK_ULONG max, CK_ULONG_PTR count)
{
	ENTER(out && count);
	begin_session(P11_OP_FIND, s);
	wire_put_u32(&call.w, max > P11_FIND_MAX ? P11_FIND_MAX : (uint32_t)max);
	CK_RV rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	uint32_t n = wire_get_u32(&call.r);
	if (n > max || n > P11_FIND_MAX)
		return leave(CKR_DEVICE_ERROR);
	for (uint32_t i = 0; i < n; i++)
		out[i] = wire_get_u64(&call.r);
	if ((rv = rpc_end(&call, rv)) == CKR_OK)
		*count = n;
	return leave(rv);
}

EXPORT CK_RV C_FindObjectsFinal(CK_SESSION_HANDLE s)
{
	return session_call(P11_OP_FIND_FINAL, s);
}

/* A mechanism argument: type and parameter bytes. */
static CK_RV put_mechanism(CK_MECHANISM_PTR m)
{
	if (!m || (!m->pParameter && m->ulParameterLen))
		return CKR_ARGUMENTS_BAD;
	if (m->ulParameterLen > P11_ATTR_VALUE_MAX)
		return CKR_MECHANISM_PARAM_INVALID;
	wire_put_u64(&call.w, m->mechanism);
	wire_put_string(&call.w, m->pParameter, m->ulParameterLen);
	return CKR_OK;
}

EXPORT CK_RV C_GenerateKeyPair(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_ATTRIBUTE_PTR pt, CK_ULONG pn,
			       CK_ATTRIBUTE_PTR kt, CK_ULONG kn, CK_OBJECT_HANDLE_PTR pub,
			       CK_OBJECT_HANDLE_PTR priv)
{
	ENTER(pub && priv);
	begin_session(P11_OP_GENERATE_KEY_PAIR, s);
	CK_RV rv = put_mechanism(m);
	if (rv == CKR_OK)
		rv = put_template(pt, pn);
	if (rv == CKR_OK)
		rv = put_template(kt, kn);
	if (rv == CKR_OK)
		rv = send_call();
	if (rv != CKR_OK)
		return leave(rv);
	CK_OBJECT_HANDLE a = wire_get_u64(&call.r), b = wire_get_u64(&call.r);
	if ((rv = rpc_end(&call, rv)) == CKR_OK) {
		*pub = a;
		*priv = b;
	}
	return leave(rv);
}

/* CKM_EDDSA's CK_EDDSA_PARAMS (PKCS#11 3.0; not in p11-kit's header)
 * holds a pointer, and the token makes pure Ed25519 alone: that form
 * (phFlag false, no context) means what no parameter means, and travels
 * as none (*m then points at pure); Ed25519ph and Ed25519ctx are
 * refused here (SoftHSM2 2.6 ignores the parameter: it would answer them
 * with a pure signature). Other mechanisms are left as they are. */
static CK_RV eddsa_pure(CK_MECHANISM_PTR *m, CK_MECHANISM *pure)
{
	const CK_MECHANISM *in = *m;
	struct {
		CK_BBOOL ph;
		CK_ULONG ctx_len;
		CK_BYTE_PTR ctx;
	} ep;
	if (!in || in->mechanism != CKM_EDDSA || (!in->pParameter && !in->ulParameterLen))
		return CKR_OK;
	if (!in->pParameter || in->ulParameterLen != sizeof ep)
		return CKR_MECHANISM_PARAM_INVALID;
	memcpy(&ep, in->pParameter, sizeof ep);
	if (ep.ph != CK_FALSE || ep.ctx_len)
		return CKR_MECHANISM_PARAM_INVALID;
	*pure = (CK_MECHANISM){ CKM_EDDSA, NULL, 0 };
	*m = pure;
	return CKR_OK;
}

/* An init's request (C_SignInit, C_EncryptInit, C_DecryptInit): the
 * session, the mechanism (put_mech's error, if it has one) and the key. */
static CK_RV begin_init(enum p11_op op, CK_SESSION_HANDLE s, CK_MECHANISM_PTR m,
			CK_RV (*put_mech)(CK_MECHANISM_PTR m), CK_OBJECT_HANDLE key)
{
	begin_session(op, s);
	CK_RV rv = put_mech(m);
	if (rv == CKR_OK)
		wire_put_u64(&call.w, key);
	return rv;
}

/* Each kind's init request. */
static const enum p11_op init_op[INIT_KINDS] = {
	[INIT_SIGN] = P11_OP_SIGN_INIT,
	[INIT_ENCRYPT] = P11_OP_ENCRYPT_INIT,
	[INIT_DECRYPT] = P11_OP_DECRYPT_INIT,
};

/* An init's arguments as they travel. */
static void put_init(const struct init_call *i)
{
	wire_put_u64(&call.w, i->session);
	wire_put_u64(&call.w, i->mech);
	wire_put_string(&call.w, i->param, i->plen);
	wire_put_u64(&call.w, i->key);
}

/* The init request that begin_init built, as the memo keeps it (its
 * parameter as it travels); false if it is never deferred. */
static bool init_of_request(struct init_call *i, enum init_kind kind)
{
	struct wire_reader r;
	wire_reader_init(&r, call.w.p, call.w.len);
	wire_get_raw(&r, 2 + P11_APP_ID);
	CK_SESSION_HANDLE s = wire_get_u64(&r);
	CK_MECHANISM_TYPE mech = wire_get_u64(&r);
	struct wire_bytes param = wire_get_string(&r);
	CK_OBJECT_HANDLE key = wire_get_u64(&r);
	return !r.bad && wire_done(&r) && init_call_make(i, kind, s, mech, param.p, param.len, key);
}

/* An init whose request is built: one the token accepted before on this
 * session is deferred, to go with the call after it (init_memo.h); any
 * other goes now. */
static CK_RV init_or_defer(enum init_kind kind, CK_SESSION_HANDLE s)
{
	if (init_memo_deferred(s, kind)) /* an operation waits: the token would say so */
		return CKR_OPERATION_ACTIVE;
	struct init_call i;
	bool keep = init_of_request(&i, kind);
	if (keep && init_memo_defer(&i))
		return CKR_OK;
	CK_RV rv = no_results();
	if (rv == CKR_OK && keep)
		init_memo_accepted(&i);
	else
		init_memo_refused(s, kind); /* its next init goes to the token */
	return rv;
}

EXPORT CK_RV C_SignInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE key)
{
	ENTER(true);
	CK_MECHANISM pure;
	CK_RV rv = eddsa_pure(&m, &pure);
	if (rv != CKR_OK)
		return leave(rv);
	rv = begin_init(P11_OP_SIGN_INIT, s, m, put_mechanism, key);
	return leave(rv != CKR_OK ? rv : init_or_defer(INIT_SIGN, s));
}

/* Sends the session's deferred init of this kind on its own (before a
 * length query or a multi-part call): CKR_OK if there was none or the
 * token accepted it. */
static CK_RV send_deferred(CK_SESSION_HANDLE s, enum init_kind kind)
{
	struct init_call i;
	if (!init_memo_take(s, kind, &i))
		return CKR_OK;
	begin(init_op[kind]);
	put_init(&i);
	CK_RV rv = no_results();
	rpc_wipe(&call);
	if (rv != CKR_OK)
		init_memo_refused(s, kind);
	return rv;
}

/* After a call that ends an operation when it succeeds (C_Sign,
 * C_SignFinal, C_Encrypt, ...): the operation goes on after a length
 * query or a buffer too small, and may after a token that did not
 * answer. After an error the key may be gone: the next init of this kind
 * asks the token. */
static CK_RV op_done(CK_SESSION_HANDLE s, enum init_kind kind, CK_RV rv, bool query)
{
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL || rv == CKR_DEVICE_ERROR)
		init_memo_active(s, kind, !(rv == CKR_OK && !query));
	else
		init_memo_refused(s, kind);
	return rv;
}

/* After an update call: the operation goes on, unless the token refused
 * it (and so ended it). */
static CK_RV op_goes_on(CK_SESSION_HANDLE s, enum init_kind kind, CK_RV rv)
{
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL || rv == CKR_DEVICE_ERROR)
		init_memo_active(s, kind, true);
	else
		init_memo_refused(s, kind);
	return rv;
}

/* A mechanism whose parameter holds pointers travels flattened
 * (p11_wire.h): CK_RSA_PKCS_OAEP_PARAMS as its hash, MGF and source and
 * the label's bytes (none at all: RFC 8017's defaults); CK_GCM_PARAMS as
 * u64 ivBits, u64 tagBits, bytes iv, bytes aad. Other mechanisms'
 * parameters go as they are. */
static CK_RV put_oaep(CK_MECHANISM_PTR m)
{
	const CK_RSA_PKCS_OAEP_PARAMS *p = m->pParameter;
	if (!p && !m->ulParameterLen) {
		wire_put_u64(&call.w, m->mechanism);
		wire_put_string(&call.w, NULL, 0);
		return CKR_OK;
	}
	if (!p || m->ulParameterLen != sizeof *p || (!p->pSourceData && p->ulSourceDataLen) ||
	    p->ulSourceDataLen > P11_OAEP_LABEL_MAX)
		return CKR_MECHANISM_PARAM_INVALID;
	uint8_t flat[3 * 8 + P11_OAEP_LABEL_MAX];
	struct wire_writer w;
	wire_writer_init(&w, flat, sizeof flat);
	wire_put_u64(&w, p->hashAlg);
	wire_put_u64(&w, p->mgf);
	wire_put_u64(&w, p->source);
	if (p->ulSourceDataLen)
		wire_put_raw(&w, p->pSourceData, p->ulSourceDataLen);
	wire_put_u64(&call.w, m->mechanism);
	wire_put_string(&call.w, flat, w.len);
	return CKR_OK;
}

static CK_RV put_gcm(CK_MECHANISM_PTR m)
{
	const CK_GCM_PARAMS *p = m->pParameter;
	if (!p || m->ulParameterLen != sizeof *p || (!p->pIv && p->ulIvLen) || (!p->pAAD && p->ulAADLen) ||
	    p->ulIvLen > P11_ATTR_VALUE_MAX || p->ulAADLen > P11_ATTR_VALUE_MAX - 32 - p->ulIvLen)
		return CKR_MECHANISM_PARAM_INVALID;
	wire_put_u64(&call.w, m->mechanism);
	size_t mark = wire_begin_string(&call.w);
	wire_put_u64(&call.w, p->ulIvBits);
	wire_put_u64(&call.w, p->ulTagBits);
	wire_put_string(&call.w, p->pIv, p->ulIvLen);
	wire_put_string(&call.w, p->pAAD, p->ulAADLen);
	wire_end_string(&call.w, mark);
	return CKR_OK;
}

static CK_RV put_mech_flat(CK_MECHANISM_PTR m)
{
	if (m && m->mechanism == CKM_RSA_PKCS_OAEP)
		return put_oaep(m);
	if (m && m->mechanism == CKM_AES_GCM)
		return put_gcm(m);
	return put_mechanism(m);
}

/* The result of SIGN, SIGN_FINAL or DECRYPT: the signature's length, and the
 * signature unless it was a length query or did not fit. Called locked,
 * the request built; does not unlock. */
static CK_RV sign_result(CK_BYTE_PTR sig, CK_ULONG_PTR siglen)
{
	CK_RV rv = send_call();
	if (rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	uint64_t len = wire_get_u64(&call.r);
	struct wire_bytes v = p11_get_bytes(&call.r, P11_BODY_MAX);
	if ((rv = rpc_end(&call, rv)) != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	if (v.len && (v.len != len || !sig || v.len > *siglen))
		return CKR_DEVICE_ERROR;
	if (v.len)
		memcpy(sig, v.p, v.len);
	*siglen = len;
	return rv;
}

/* A request that hands bytes out: the session, whether it is a length
 * query, the caller's room; after a deferred init's arguments (init) in
 * an op that carries both. */
static void put_out_head(enum p11_op op, CK_SESSION_HANDLE s, bool query, CK_ULONG room,
			 const struct init_call *init)
{
	begin(op);
	if (init)
		put_init(init);
	wire_put_u64(&call.w, s);
	wire_put_u8(&call.w, query);
	wire_put_u64(&call.w, query ? 0 : room);
}

/* A signing request: its signature's room is the caller's *siglen (a
 * length query when sig is NULL). */
static void put_sign_head(enum p11_op op, CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG_PTR siglen,
			  const struct init_call *init)
{
	put_out_head(op, s, !sig, sig ? *siglen : 0, init);
}

static CK_RV sign_update(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len)
{
	for (CK_ULONG done = 0; done < len;) {
		CK_ULONG n = len - done < P11_DATA_MAX ? len - done : P11_DATA_MAX;
		begin_session(P11_OP_SIGN_UPDATE, s);
		wire_put_string(&call.w, data + done, n);
		CK_RV rv = no_results();
		if (rv != CKR_OK)
			return rv;
		rpc_wipe(&call);
		done += n;
	}
	return CKR_OK;
}

EXPORT CK_RV C_Sign(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len, CK_BYTE_PTR sig, CK_ULONG_PTR siglen)
{
	ENTER((data || !len) && siglen);
	bool big = len > P11_DATA_MAX;
	/* A deferred C_SignInit goes with it, or first if the data needs
	 * more than one frame. */
	struct init_call init;
	bool with_init = !big && init_memo_take(s, INIT_SIGN, &init);
	CK_RV rv = big ? send_deferred(s, INIT_SIGN) : CKR_OK;
	if (rv != CKR_OK)
		return leave(rv);
	put_sign_head(with_init ? P11_OP_SIGN_INIT_SIGN : P11_OP_SIGN, s, big ? NULL : sig, siglen,
		      with_init ? &init : NULL);
	wire_put_string(&call.w, data, big ? 0 : len);
	CK_ULONG room = siglen ? *siglen : 0;
	rv = sign_result(big ? NULL : sig, siglen);
	if (!big || rv != CKR_OK || !sig)
		return leave(op_done(s, INIT_SIGN, rv, big || !sig));
	/* Too long for one frame: the same signature through the multi-part
	 * calls, once the caller's buffer is known to fit it. */
	if (room < *siglen)
		return leave(op_done(s, INIT_SIGN, CKR_BUFFER_TOO_SMALL, false));
	rpc_wipe(&call);
	if ((rv = sign_update(s, data, len)) != CKR_OK)
		return leave(op_done(s, INIT_SIGN, rv, false));
	*siglen = room;
	put_sign_head(P11_OP_SIGN_FINAL, s, sig, siglen, NULL);
	return leave(op_done(s, INIT_SIGN, sign_result(sig, siglen), false));
}

EXPORT CK_RV C_SignUpdate(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len)
{
	ENTER(data || !len);
	CK_RV rv = send_deferred(s, INIT_SIGN);
	if (rv == CKR_OK)
		rv = sign_update(s, data, len);
	return leave(op_goes_on(s, INIT_SIGN, rv));
}

EXPORT CK_RV C_SignFinal(CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG_PTR siglen)
{
	ENTER(siglen);
	CK_RV rv = send_deferred(s, INIT_SIGN);
	if (rv != CKR_OK)
		return leave(rv);
	put_sign_head(P11_OP_SIGN_FINAL, s, sig, siglen, NULL);
	return leave(op_done(s, INIT_SIGN, sign_result(sig, siglen), !sig));
}

/* ---- results of a length the token knows: encryption, decryption,
 * digests */

/* Sends the request built and reads a result: u64 length and its bytes
 * (none after a length query or with CKR_BUFFER_TOO_SMALL), which go to
 * out (room bytes there). piece: the bytes may be the first part of the
 * length (a FINAL that hands its output out in pieces). *got: bytes
 * copied. Called locked; does not unlock. */
static CK_RV out_result(CK_BYTE_PTR out, CK_ULONG room, uint64_t *len, size_t *got, bool piece)
{
	*got = 0;
	CK_RV rv = send_call();
	if (rv != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	*len = wire_get_u64(&call.r);
	struct wire_bytes v = p11_get_bytes(&call.r, P11_BODY_MAX);
	if ((rv = rpc_end(&call, rv)) != CKR_OK && rv != CKR_BUFFER_TOO_SMALL)
		return rv;
	if (v.len && (!out || v.len > room || (piece ? v.len > *len : v.len != *len)))
		return CKR_DEVICE_ERROR;
	if (v.len)
		memcpy(out, v.p, v.len);
	*got = v.len;
	return rv;
}


/* The ops of one direction (encryption or decryption). */
struct crypt_ops {
	enum init_kind kind;
	enum p11_op with_init, whole, update, final;
};
static const struct crypt_ops encrypt_ops = { INIT_ENCRYPT, P11_OP_ENCRYPT_INIT_ENCRYPT, P11_OP_ENCRYPT,
					      P11_OP_ENCRYPT_UPDATE, P11_OP_ENCRYPT_FINAL };
static const struct crypt_ops decrypt_ops = { INIT_DECRYPT, P11_OP_DECRYPT_INIT_DECRYPT, P11_OP_DECRYPT,
					      P11_OP_DECRYPT_UPDATE, P11_OP_DECRYPT_FINAL };

/* A FINAL's whole output into out (room bytes), in as many calls as the
 * token hands it out in; query: only its length. */
static CK_RV final_call(enum p11_op op, CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	CK_ULONG room = out ? *outlen : 0, done = 0;
	for (;;) {
		uint64_t len;
		size_t got;
		put_out_head(op, s, !out, room - done, NULL);
		CK_RV rv = out_result(out ? out + done : NULL, room - done, &len, &got, true);
		rpc_wipe(&call);
		if (rv != CKR_OK || !out) {
			if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
				*outlen = done + len;
			return rv;
		}
		done += got;
		if (got == len) {
			*outlen = done;
			return CKR_OK;
		}
	}
}

/* An UPDATE of len bytes in, any length: one frame, or (longer) its
 * output's length asked first, then pieces, each with the room left. */
static CK_RV update_call(enum p11_op op, CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR out,
			 CK_ULONG_PTR outlen)
{
	CK_ULONG room = out ? *outlen : 0, done = 0;
	uint64_t n;
	size_t got;
	bool pieces = len > P11_DATA_MAX;
	put_out_head(op, s, !out || pieces, room, NULL);
	wire_put_u64(&call.w, len);
	wire_put_string(&call.w, in, pieces ? 0 : len);
	CK_RV rv = out_result(out, room, &n, &got, false);
	rpc_wipe(&call);
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
		*outlen = n;
	if (rv != CKR_OK || !out || !pieces)
		return rv;
	if (room < n) {
		*outlen = n;
		return CKR_BUFFER_TOO_SMALL;
	}
	for (CK_ULONG off = 0; off < len;) {
		CK_ULONG k = len - off < P11_DATA_MAX ? len - off : P11_DATA_MAX;
		put_out_head(op, s, false, room - done, NULL);
		wire_put_u64(&call.w, k);
		wire_put_string(&call.w, in + off, k);
		rv = out_result(out + done, room - done, &n, &got, false);
		rpc_wipe(&call);
		if (rv != CKR_OK)
			return rv;
		done += got;
		off += k;
	}
	*outlen = done;
	return CKR_OK;
}

/* C_Encrypt or C_Decrypt: in one frame, with the session's deferred init
 * if it has one (ENCRYPT_INIT_ENCRYPT, DECRYPT_INIT_DECRYPT); a length
 * query, or (longer than a frame) the whole output's length asked first,
 * then UPDATEs and the FINAL, after the deferred init on its own. */
static CK_RV crypt_call(const struct crypt_ops *ops, CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len,
			CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	CK_ULONG room = out ? *outlen : 0;
	uint64_t n;
	size_t got;
	bool pieces = len > P11_DATA_MAX, query = !out || pieces;
	struct init_call init;
	bool with_init = !query && init_memo_take(s, ops->kind, &init);
	CK_RV rv = query ? send_deferred(s, ops->kind) : CKR_OK;
	if (rv != CKR_OK)
		return rv;
	put_out_head(with_init ? ops->with_init : ops->whole, s, query, room, with_init ? &init : NULL);
	wire_put_u64(&call.w, len);
	wire_put_string(&call.w, in, pieces ? 0 : len);
	rv = out_result(out, room, &n, &got, false);
	rpc_wipe(&call);
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
		*outlen = n;
	if (rv != CKR_OK || !out || !pieces)
		return rv;
	if (room < n)
		return CKR_BUFFER_TOO_SMALL;
	CK_ULONG part = room;
	if ((rv = update_call(ops->update, s, in, len, out, &part)) != CKR_OK)
		return rv;
	CK_ULONG rest = room - part;
	if ((rv = final_call(ops->final, s, out + part, &rest)) != CKR_OK)
		return rv;
	*outlen = part + rest;
	return CKR_OK;
}

/* C_EncryptUpdate or C_DecryptUpdate, after the session's deferred init. */
static CK_RV crypt_update(const struct crypt_ops *ops, CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len,
			  CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	CK_RV rv = send_deferred(s, ops->kind);
	if (rv == CKR_OK)
		rv = update_call(ops->update, s, in, len, out, outlen);
	return op_goes_on(s, ops->kind, rv);
}

/* C_EncryptFinal or C_DecryptFinal, after the session's deferred init. */
static CK_RV crypt_final(const struct crypt_ops *ops, CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	CK_RV rv = send_deferred(s, ops->kind);
	if (rv == CKR_OK)
		rv = final_call(ops->final, s, out, outlen);
	return op_done(s, ops->kind, rv, !out);
}

/* An AES C_EncryptInit or C_DecryptInit the token accepted before on
 * this session goes with the C_Encrypt or C_Decrypt after it
 * (init_memo.h); any other goes now. */
EXPORT CK_RV C_EncryptInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE key)
{
	ENTER(true);
	CK_RV rv = begin_init(P11_OP_ENCRYPT_INIT, s, m, put_mech_flat, key);
	return leave(rv != CKR_OK ? rv : init_or_defer(INIT_ENCRYPT, s));
}

EXPORT CK_RV C_Encrypt(CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER((in || !len) && outlen);
	return leave(op_done(s, INIT_ENCRYPT, crypt_call(&encrypt_ops, s, in, len, out, outlen), !out));
}

EXPORT CK_RV C_EncryptUpdate(CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR out,
			     CK_ULONG_PTR outlen)
{
	ENTER((in || !len) && outlen);
	return leave(crypt_update(&encrypt_ops, s, in, len, out, outlen));
}

EXPORT CK_RV C_EncryptFinal(CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER(outlen);
	return leave(crypt_final(&encrypt_ops, s, out, outlen));
}

EXPORT CK_RV C_DecryptInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE key)
{
	ENTER(true);
	CK_RV rv = begin_init(P11_OP_DECRYPT_INIT, s, m, put_mech_flat, key);
	return leave(rv != CKR_OK ? rv : init_or_defer(INIT_DECRYPT, s));
}

EXPORT CK_RV C_Decrypt(CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER((in || !len) && outlen);
	return leave(op_done(s, INIT_DECRYPT, crypt_call(&decrypt_ops, s, in, len, out, outlen), !out));
}

EXPORT CK_RV C_DecryptUpdate(CK_SESSION_HANDLE s, CK_BYTE_PTR in, CK_ULONG len, CK_BYTE_PTR out,
			     CK_ULONG_PTR outlen)
{
	ENTER((in || !len) && outlen);
	return leave(crypt_update(&decrypt_ops, s, in, len, out, outlen));
}

EXPORT CK_RV C_DecryptFinal(CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER(outlen);
	return leave(crypt_final(&decrypt_ops, s, out, outlen));
}

/* Data in pieces of at most P11_DATA_MAX, each in a request of op (a
 * multi-part digest, signature or verification): CKR_OK or the first
 * error. */
static CK_RV send_parts(enum p11_op op, CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len)
{
	for (CK_ULONG done = 0; done < len;) {
		CK_ULONG n = len - done < P11_DATA_MAX ? len - done : P11_DATA_MAX;
		begin_session(op, s);
		wire_put_string(&call.w, data + done, n);
		CK_RV rv = no_results();
		rpc_wipe(&call);
		if (rv != CKR_OK)
			return rv;
		done += n;
	}
	return CKR_OK;
}

EXPORT CK_RV C_DigestInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m)
{
	ENTER(true);
	begin_session(P11_OP_DIGEST_INIT, s);
	CK_RV rv = put_mechanism(m);
	return rv != CKR_OK ? leave(rv) : simple();
}

/* C_DigestFinal's request, answered into out. */
static CK_RV digest_final(CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	uint64_t n;
	size_t got;
	put_out_head(P11_OP_DIGEST_FINAL, s, !out, out ? *outlen : 0, NULL);
	CK_RV rv = out_result(out, out ? *outlen : 0, &n, &got, false);
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
		*outlen = n;
	return rv;
}

/* In one frame, or (longer) the digest's length asked first (a FINAL
 * that is a length query keeps the operation), then the parts. */
EXPORT CK_RV C_Digest(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER((data || !len) && outlen);
	if (len > P11_DATA_MAX) {
		CK_ULONG need = 0, room = out ? *outlen : 0;
		CK_RV rv = digest_final(s, NULL, &need);
		rpc_wipe(&call);
		if (rv == CKR_OK && (!out || room < need)) {
			*outlen = need;
			return leave(out ? CKR_BUFFER_TOO_SMALL : CKR_OK);
		}
		if (rv == CKR_OK)
			rv = send_parts(P11_OP_DIGEST_UPDATE, s, data, len);
		return leave(rv == CKR_OK ? digest_final(s, out, outlen) : rv);
	}
	uint64_t n;
	size_t got;
	put_out_head(P11_OP_DIGEST, s, !out, out ? *outlen : 0, NULL);
	wire_put_string(&call.w, data, len);
	CK_RV rv = out_result(out, out ? *outlen : 0, &n, &got, false);
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
		*outlen = n;
	return leave(rv);
}

EXPORT CK_RV C_DigestUpdate(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len)
{
	ENTER(data || !len);
	return leave(send_parts(P11_OP_DIGEST_UPDATE, s, data, len));
}

EXPORT CK_RV C_DigestKey(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE key)
{
	ENTER(true);
	begin_session(P11_OP_DIGEST_KEY, s);
	wire_put_u64(&call.w, key);
	return simple();
}

EXPORT CK_RV C_DigestFinal(CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER(outlen);
	return leave(digest_final(s, out, outlen));
}

EXPORT CK_RV C_VerifyInit(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE key)
{
	ENTER(true);
	CK_MECHANISM pure;
	CK_RV rv = eddsa_pure(&m, &pure);
	if (rv != CKR_OK)
		return leave(rv);
	rv = begin_init(P11_OP_VERIFY_INIT, s, m, put_mechanism, key);
	return rv != CKR_OK ? leave(rv) : simple();
}

/* A signature longer than any the token makes goes as none: the token
 * answers CKR_SIGNATURE_LEN_RANGE and ends the operation. */
static void put_signature(CK_BYTE_PTR sig, CK_ULONG len)
{
	wire_put_string(&call.w, sig, len <= P11_SIG_MAX ? len : 0);
}

static CK_RV verify_final(CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG siglen)
{
	begin_session(P11_OP_VERIFY_FINAL, s);
	put_signature(sig, siglen);
	return no_results();
}

EXPORT CK_RV C_Verify(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len, CK_BYTE_PTR sig, CK_ULONG siglen)
{
	ENTER((data || !len) && (sig || !siglen));
	if (len > P11_DATA_MAX) {
		CK_RV rv = send_parts(P11_OP_VERIFY_UPDATE, s, data, len);
		return leave(rv == CKR_OK ? verify_final(s, sig, siglen) : rv);
	}
	begin_session(P11_OP_VERIFY, s);
	wire_put_string(&call.w, data, len);
	put_signature(sig, siglen);
	return simple();
}

EXPORT CK_RV C_VerifyUpdate(CK_SESSION_HANDLE s, CK_BYTE_PTR data, CK_ULONG len)
{
	ENTER(data || !len);
	return leave(send_parts(P11_OP_VERIFY_UPDATE, s, data, len));
}

EXPORT CK_RV C_VerifyFinal(CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG siglen)
{
	ENTER(sig || !siglen);
	return leave(verify_final(s, sig, siglen));
}

/* ---- secret keys, copies, sizes */

EXPORT CK_RV C_GenerateKey(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_ATTRIBUTE_PTR t, CK_ULONG n,
			   CK_OBJECT_HANDLE_PTR key)
{
	ENTER(key);
	begin_session(P11_OP_GENERATE_KEY, s);
	CK_RV rv = put_mechanism(m);
	if (rv == CKR_OK)
		rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : handle_result(key);
}

EXPORT CK_RV C_CopyObject(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o, CK_ATTRIBUTE_PTR t, CK_ULONG n,
			  CK_OBJECT_HANDLE_PTR copy)
{
	ENTER(copy);
	begin_session(P11_OP_COPY_OBJECT, s);
	wire_put_u64(&call.w, o);
	CK_RV rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : handle_result(copy);
}

EXPORT CK_RV C_GetObjectSize(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE o, CK_ULONG_PTR size)
{
	ENTER(size);
	begin_session(P11_OP_OBJECT_SIZE, s);
	wire_put_u64(&call.w, o);
	return handle_result(size);
}

/* The token never hands out an operation's state (its keys' schedules
 * would leave the guest), as SoftHSM2 does not: CKR_FUNCTION_NOT_SUPPORTED
 * for a session that exists. */
static CK_RV no_operation_state(CK_SESSION_HANDLE s)
{
	begin_session(P11_OP_SESSION_INFO, s);
	CK_RV rv = send_call();
	return leave(rv == CKR_OK ? CKR_FUNCTION_NOT_SUPPORTED : rv);
}

EXPORT CK_RV C_GetOperationState(CK_SESSION_HANDLE s, CK_BYTE_PTR st, CK_ULONG_PTR len)
{
	ENTER(len);
	return no_operation_state(s);
}

EXPORT CK_RV C_SetOperationState(CK_SESSION_HANDLE s, CK_BYTE_PTR st, CK_ULONG len, CK_OBJECT_HANDLE e,
				 CK_OBJECT_HANDLE a)
{
	ENTER(st || !len);
	return no_operation_state(s);
}

/* ---- wrapping, unwrapping, derivation */

EXPORT CK_RV C_WrapKey(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE wk, CK_OBJECT_HANDLE k,
		       CK_BYTE_PTR out, CK_ULONG_PTR outlen)
{
	ENTER(outlen);
	begin_session(P11_OP_WRAP_KEY, s);
	CK_RV rv = put_mech_flat(m);
	if (rv != CKR_OK)
		return leave(rv);
	wire_put_u64(&call.w, wk);
	wire_put_u64(&call.w, k);
	wire_put_u8(&call.w, !out);
	wire_put_u64(&call.w, out ? *outlen : 0);
	uint64_t n;
	size_t got;
	rv = out_result(out, out ? *outlen : 0, &n, &got, false);
	if (rv == CKR_OK || rv == CKR_BUFFER_TOO_SMALL)
		*outlen = n;
	return leave(rv);
}

EXPORT CK_RV C_UnwrapKey(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE uk, CK_BYTE_PTR wrapped,
			 CK_ULONG wlen, CK_ATTRIBUTE_PTR t, CK_ULONG n, CK_OBJECT_HANDLE_PTR key)
{
	ENTER(key && (wrapped || !wlen));
	if (wlen > P11_DATA_MAX)
		return leave(CKR_WRAPPED_KEY_LEN_RANGE);
	begin_session(P11_OP_UNWRAP_KEY, s);
	CK_RV rv = put_mech_flat(m);
	if (rv != CKR_OK)
		return leave(rv);
	wire_put_u64(&call.w, uk);
	wire_put_string(&call.w, wrapped, wlen);
	rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : handle_result(key);
}

/* CK_ECDH1_DERIVE_PARAMS flattened (p11_wire.h); other mechanisms'
 * parameters go as they are. */
static CK_RV put_derive_mech(CK_MECHANISM_PTR m)
{
	if (!m || (m->mechanism != CKM_ECDH1_DERIVE && m->mechanism != CKM_ECDH1_COFACTOR_DERIVE))
		return put_mechanism(m);
	const CK_ECDH1_DERIVE_PARAMS *p = m->pParameter;
	if (!p || m->ulParameterLen != sizeof *p || (!p->pSharedData && p->ulSharedDataLen) ||
	    (!p->pPublicData && p->ulPublicDataLen) || p->ulSharedDataLen > P11_ATTR_VALUE_MAX / 2 ||
	    p->ulPublicDataLen > P11_ATTR_VALUE_MAX / 2)
		return CKR_MECHANISM_PARAM_INVALID;
	wire_put_u64(&call.w, m->mechanism);
	size_t mark = wire_begin_string(&call.w);
	wire_put_u64(&call.w, p->kdf);
	wire_put_string(&call.w, p->pSharedData, p->ulSharedDataLen);
	wire_put_string(&call.w, p->pPublicData, p->ulPublicDataLen);
	wire_end_string(&call.w, mark);
	return CKR_OK;
}

EXPORT CK_RV C_DeriveKey(CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE base, CK_ATTRIBUTE_PTR t,
			 CK_ULONG n, CK_OBJECT_HANDLE_PTR key)
{
	ENTER(key);
	begin_session(P11_OP_DERIVE_KEY, s);
	CK_RV rv = put_derive_mech(m);
	if (rv != CKR_OK)
		return leave(rv);
	wire_put_u64(&call.w, base);
	rv = put_template(t, n);
	return rv != CKR_OK ? leave(rv) : handle_result(key);
}

/* The token seeds its generator from its own sources at every call
 * (docs/pkcs11.md): it takes no seed from a caller. */
EXPORT CK_RV C_SeedRandom(CK_SESSION_HANDLE s, CK_BYTE_PTR seed, CK_ULONG len)
{
	ENTER(seed || !len);
	return leave(CKR_RANDOM_SEED_NOT_SUPPORTED);
}

EXPORT CK_RV C_GenerateRandom(CK_SESSION_HANDLE s, CK_BYTE_PTR out, CK_ULONG len)
{
	ENTER(out || !len);
	for (CK_ULONG done = 0; done < len;) {
		uint32_t n = len - done < P11_RANDOM_MAX ? (uint32_t)(len - done) : P11_RANDOM_MAX;
		begin_session(P11_OP_GENERATE_RANDOM, s);
		wire_put_u32(&call.w, n);
		CK_RV rv = send_call();
		if (rv != CKR_OK)
			return leave(rv);
		struct wire_bytes v = p11_get_bytes(&call.r, P11_RANDOM_MAX);
		if ((rv = rpc_end(&call, rv)) != CKR_OK)
			return leave(rv);
		if (v.len != n)
			return leave(CKR_DEVICE_ERROR);
		memcpy(out + done, v.p, n);
		rpc_wipe(&call);
		done += n;
	}
	return leave(CKR_OK);
}

/* Everything else: CKR_FUNCTION_NOT_SUPPORTED, once initialised (before
 * C_Initialize, and in a child after fork() until it calls it again,
 * every function answers CKR_CRYPTOKI_NOT_INITIALIZED). */
#define NS(name, ...)                                   \
	EXPORT CK_RV name(__VA_ARGS__)                  \
	{                                               \
		ENTER(true);                            \
		return leave(CKR_FUNCTION_NOT_SUPPORTED); \
	}
NS(C_SignRecoverInit, CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k)
NS(C_SignRecover, CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG n, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_VerifyRecoverInit, CK_SESSION_HANDLE s, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k)
NS(C_VerifyRecover, CK_SESSION_HANDLE s, CK_BYTE_PTR sig, CK_ULONG sn, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_DigestEncryptUpdate, CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG n, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_DecryptDigestUpdate, CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG n, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_SignEncryptUpdate, CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG n, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_DecryptVerifyUpdate, CK_SESSION_HANDLE s, CK_BYTE_PTR d, CK_ULONG n, CK_BYTE_PTR o, CK_ULONG_PTR on)
NS(C_WaitForSlotEvent, CK_FLAGS f, CK_SLOT_ID_PTR slot, CK_VOID_PTR r)

/* The legacy parallel functions: PKCS#11 has them answer
 * CKR_FUNCTION_NOT_PARALLEL. */
EXPORT CK_RV C_GetFunctionStatus(CK_SESSION_HANDLE s)
{
	ENTER(true);
	return leave(CKR_FUNCTION_NOT_PARALLEL);
}

EXPORT CK_RV C_CancelFunction(CK_SESSION_HANDLE s)
{
	ENTER(true);
	return leave(CKR_FUNCTION_NOT_PARALLEL);
}

#define F(name) .name = name
static CK_FUNCTION_LIST functions = {
	.version = { 2, 40 },
	F(C_Initialize), F(C_Finalize), F(C_GetInfo), F(C_GetFunctionList), F(C_GetSlotList),
	F(C_GetSlotInfo), F(C_GetTokenInfo), F(C_GetMechanismList), F(C_GetMechanismInfo),
	F(C_InitToken), F(C_InitPIN), F(C_SetPIN), F(C_OpenSession), F(C_CloseSession),
	F(C_CloseAllSessions), F(C_GetSessionInfo), F(C_GetOperationState), F(C_SetOperationState),
	F(C_Login), F(C_Logout), F(C_CreateObject), F(C_CopyObject), F(C_DestroyObject),
	F(C_GetObjectSize), F(C_GetAttributeValue), F(C_SetAttributeValue), F(C_FindObjectsInit),
	F(C_FindObjects), F(C_FindObjectsFinal), F(C_EncryptInit), F(C_Encrypt), F(C_EncryptUpdate),
	F(C_EncryptFinal), F(C_DecryptInit), F(C_Decrypt), F(C_DecryptUpdate), F(C_DecryptFinal),
	F(C_DigestInit), F(C_Digest), F(C_DigestUpdate), F(C_DigestKey), F(C_DigestFinal),
	F(C_SignInit), F(C_Sign), F(C_SignUpdate), F(C_SignFinal), F(C_SignRecoverInit),
	F(C_SignRecover), F(C_VerifyInit), F(C_Verify), F(C_VerifyUpdate), F(C_VerifyFinal),
	F(C_VerifyRecoverInit), F(C_VerifyRecover), F(C_DigestEncryptUpdate),
	F(C_DecryptDigestUpdate), F(C_SignEncryptUpdate), F(C_DecryptVerifyUpdate),
	F(C_GenerateKey), F(C_GenerateKeyPair), F(C_WrapKey), F(C_UnwrapKey), F(C_DeriveKey),
	F(C_SeedRandom), F(C_GenerateRandom), F(C_GetFunctionStatus), F(C_CancelFunction),
	F(C_WaitForSlotEvent),
};
