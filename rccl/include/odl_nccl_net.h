/* SPDX-License-Identifier: MIT */
/*
 * odl_nccl_net.h - the NCCL/RCCL network-plugin ABI ("ncclNet"), versions
 * v7..v12, written for OdinLink from the facts in the project's reference
 * sheet (shared/ref/net-plugin.md, sections 2.1-2.5). No NCCL header text is
 * copied; every struct size and member offset is pinned below with
 * _Static_assert so that a slip in slot order (the mistake of the
 * "OdinLink-Five" v7 header) fails the build instead of calling through the
 * wrong slot at run time. LP64 (x86_64, aarch64) only.
 *
 * The loader (NCCL >= 2.19, RCCL >= 2.20.5) dlsym()s the data objects
 * ncclNetPlugin_v<N>, newest first.
 */
#ifndef ODL_NCCL_NET_H
#define ODL_NCCL_NET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- 2.1 shared types and constants ----------------------------------- */

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7, /* core only; plugins never return it */
	ncclNumResults = 8
} ncclResult_t;

typedef enum {
	NCCL_LOG_NONE = 0,
	NCCL_LOG_VERSION = 1,
	NCCL_LOG_WARN = 2,
	NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4,
	NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef enum {
	NCCL_INIT = 1,
	NCCL_COLL = 2,
	NCCL_P2P = 4,
	NCCL_SHM = 8,
	NCCL_NET = 16,
	NCCL_GRAPH = 32,
	NCCL_TUNING = 64,
	NCCL_ENV = 128,
	NCCL_ALLOC = 256,
	NCCL_CALL = 512,
	NCCL_PROXY = 1024,
	NCCL_NVLS = 2048,
	NCCL_BOOTSTRAP = 4096,
	NCCL_REG = 8192,
	NCCL_PROFILE = 16384,
	NCCL_RAS = 32768,
	NCCL_ALL = ~0
} ncclDebugLogSubSys;

/* (level, subsystem flags, file, line, printf format, ...) */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags,
				  const char *file, int line, const char *fmt, ...);

#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_NET_MAX_REQUESTS 32 /* per comm, NCCL >= 2.19 */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1 /* v9+: preset in *request */
#define NCCL_NET_MAX_DEVS_PER_NIC_V9 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4

typedef enum {
	NCCL_NET_DEVICE_HOST = 0,
	NCCL_NET_DEVICE_UNPACK = 1
} ncclNetDeviceType;

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7

typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;

/* ---- 2.2 properties ---------------------------------------------------- */

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int speed; /* Mbps */
	int port;
	float latency; /* microseconds */
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v7_t;

typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport;
	int regIsGlobal;
	int speed;
	int port;
	float latency;
	int maxComms;
	int maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V9];
} ncclNetVDeviceProps_v9_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v10_t;

/* v9 and later: the properties up to maxCollBytes, V the vProps type */
#define ODL_NCCL_PROPS_V9_FIELDS(V)              \
	char *name;                              \
	char *pciPath;                           \
	uint64_t guid;                           \
	int ptrSupport;                          \
	int regIsGlobal;                         \
	int forceFlush;                          \
	int speed;                               \
	int port;                                \
	float latency;                           \
	int maxComms;                            \
	int maxRecvs;                            \
	ncclNetDeviceType netDeviceType;         \
	int netDeviceVersion;                    \
	V vProps;                                \
	size_t maxP2pBytes;                      \
	size_t maxCollBytes

typedef struct {
	ODL_NCCL_PROPS_V9_FIELDS(ncclNetVDeviceProps_v9_t);
} ncclNetProperties_v9_t;
typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;

/* ---- 2.3 / 2.4 function tables ---------------------------------------- */

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v7_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v7_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v7_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v8_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v8_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_v9_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v9_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v9_t;

typedef struct {
	int trafficClass; /* -1 = undefined */
} ncclNetCommConfig_v10_t;

typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
					       int64_t pluginId, void *extData);

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_v10_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,
				    uint64_t offset, int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
			      void *phandle, void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
			      void **mhandles, void **phandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclNet_v10_t;

/*
 * v11 (NCCL 2.28): init() is called once per NCCL communicator and hands
 * back a context; listen() and connect() take it (the connection config
 * moved from connect() into init()); finalize(ctx) ends a communicator's
 * use of the plugin; setNetAttr() (optional, may be NULL) passes hints.
 * Properties gain maxMultiRequestSize at the end.
 */
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;
typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v11_t;
typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v11_t;

typedef struct {
	ODL_NCCL_PROPS_V9_FIELDS(ncclNetVDeviceProps_v11_t);
	int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
	int32_t maxConcurrentPeers;
	int32_t minConcurrentPeers;
	int32_t maxFlowsPerPeer;
	int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
	ncclNetCommAttr_v11_t sendCommAttr;
	ncclNetCommAttr_v11_t recvCommAttr;
	uint32_t op;
	uint32_t algo;
	uint32_t proto;
} ncclNetAttr_v11_t;

/* the 22 slots of v11 and v12; P, V, A: the version's properties, virtual
 * device properties and attribute types */
#define ODL_NCCL_NET_V11_SLOTS(P, V, C, A, DH)                                              \
	const char *name;                                                                   \
	ncclResult_t (*init)(void **ctx, uint64_t commId, C *config,                        \
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction); \
	ncclResult_t (*devices)(int *ndev);                                                 \
	ncclResult_t (*getProperties)(int dev, P *props);                                   \
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);        \
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,          \
				DH **sendDevComm);                                          \
	ncclResult_t (*accept)(void *listenComm, void **recvComm, DH **recvDevComm);        \
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle); \
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,          \
				    uint64_t offset, int fd, void **mhandle);               \
	ncclResult_t (*deregMr)(void *comm, void *mhandle);                                 \
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, \
			      void *phandle, void **request);                               \
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, \
			      void **mhandles, void **phandles, void **request);            \
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, \
			       void **request);                                             \
	ncclResult_t (*test)(void *request, int *done, int *sizes);                         \
	ncclResult_t (*closeSend)(void *sendComm);                                          \
	ncclResult_t (*closeRecv)(void *recvComm);                                          \
	ncclResult_t (*closeListen)(void *listenComm);                                      \
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);        \
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);                \
	ncclResult_t (*makeVDevice)(int *d, V *props);                                      \
	ncclResult_t (*finalize)(void *ctx);                                                \
	ncclResult_t (*setNetAttr)(void *ctx, A *netAttr)

typedef struct {
	ODL_NCCL_NET_V11_SLOTS(ncclNetProperties_v11_t, ncclNetVDeviceProps_v11_t,
			       ncclNetCommConfig_v11_t, ncclNetAttr_v11_t, ncclNetDeviceHandle_v11_t);
} ncclNet_v11_t;

/*
 * v12 (NCCL 2.30): the v11 table with v12 types. A virtual device fuses up
 * to 8 devices (v9..v11: 4), and properties end with a rail and a plane id
 * (NCCL_NET_ID_UNDEF when unknown).
 */
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8
#define NCCL_NET_ID_UNDEF (-1)

typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;
typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v12_t;
typedef ncclNetCommAttr_v11_t ncclNetCommAttr_v12_t;
typedef ncclNetAttr_v11_t ncclNetAttr_v12_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef struct {
	ODL_NCCL_PROPS_V9_FIELDS(ncclNetVDeviceProps_v12_t);
	int maxMultiRequestSize;
	int16_t railId;
	int16_t planeId;
} ncclNetProperties_v12_t;

typedef struct {
	ODL_NCCL_NET_V11_SLOTS(ncclNetProperties_v12_t, ncclNetVDeviceProps_v12_t,
			       ncclNetCommConfig_v12_t, ncclNetAttr_v12_t, ncclNetDeviceHandle_v12_t);
} ncclNet_v12_t;

/* ---- 2.5 ABI self-check (LP64) ---------------------------------------- */

#if defined(__cplusplus)
#define ODL_NCCL_SA static_assert
#else
#define ODL_NCCL_SA _Static_assert
#endif
#define ODL_NCCL_OFF(T, m, o) ODL_NCCL_SA(offsetof(T, m) == (o), #T "." #m " at " #o)
#define ODL_NCCL_SIZE(T, s) ODL_NCCL_SA(sizeof(T) == (s), "sizeof(" #T ") == " #s)

ODL_NCCL_SA(sizeof(void *) == 8 && sizeof(size_t) == 8, "LP64 only");
ODL_NCCL_SIZE(ncclResult_t, 4);
ODL_NCCL_SIZE(ncclNetDeviceType, 4);
ODL_NCCL_SIZE(ncclDebugLogLevel, 4);
ODL_NCCL_SIZE(float, 4);

ODL_NCCL_SIZE(ncclNetDeviceHandle_v7_t, 32);
ODL_NCCL_OFF(ncclNetDeviceHandle_v7_t, netDeviceType, 0);
ODL_NCCL_OFF(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
ODL_NCCL_OFF(ncclNetDeviceHandle_v7_t, handle, 8);
ODL_NCCL_OFF(ncclNetDeviceHandle_v7_t, size, 16);
ODL_NCCL_OFF(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);

ODL_NCCL_SIZE(ncclNetProperties_v7_t, 56);
ODL_NCCL_OFF(ncclNetProperties_v7_t, name, 0);
ODL_NCCL_OFF(ncclNetProperties_v7_t, pciPath, 8);
ODL_NCCL_OFF(ncclNetProperties_v7_t, guid, 16);
ODL_NCCL_OFF(ncclNetProperties_v7_t, ptrSupport, 24);
ODL_NCCL_OFF(ncclNetProperties_v7_t, speed, 28);
ODL_NCCL_OFF(ncclNetProperties_v7_t, port, 32);
ODL_NCCL_OFF(ncclNetProperties_v7_t, latency, 36);
ODL_NCCL_OFF(ncclNetProperties_v7_t, maxComms, 40);
ODL_NCCL_OFF(ncclNetProperties_v7_t, maxRecvs, 44);
ODL_NCCL_OFF(ncclNetProperties_v7_t, netDeviceType, 48);
ODL_NCCL_OFF(ncclNetProperties_v7_t, netDeviceVersion, 52);

ODL_NCCL_SIZE(ncclNetProperties_v8_t, 64);
ODL_NCCL_OFF(ncclNetProperties_v8_t, name, 0);
ODL_NCCL_OFF(ncclNetProperties_v8_t, pciPath, 8);
ODL_NCCL_OFF(ncclNetProperties_v8_t, guid, 16);
ODL_NCCL_OFF(ncclNetProperties_v8_t, ptrSupport, 24);
ODL_NCCL_OFF(ncclNetProperties_v8_t, regIsGlobal, 28);
ODL_NCCL_OFF(ncclNetProperties_v8_t, speed, 32);
ODL_NCCL_OFF(ncclNetProperties_v8_t, port, 36);
ODL_NCCL_OFF(ncclNetProperties_v8_t, latency, 40);
ODL_NCCL_OFF(ncclNetProperties_v8_t, maxComms, 44);
ODL_NCCL_OFF(ncclNetProperties_v8_t, maxRecvs, 48);
ODL_NCCL_OFF(ncclNetProperties_v8_t, netDeviceType, 52);
ODL_NCCL_OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);

ODL_NCCL_SIZE(ncclNetVDeviceProps_v9_t, 20);
ODL_NCCL_SIZE(ncclNetProperties_v9_t, 104);
/* v9 and later: the fields before vProps (ODL_NCCL_PROPS_V9_FIELDS) */
#define ODL_NCCL_PROPS_V9_OFFS(T)                 \
	ODL_NCCL_OFF(T, name, 0);                 \
	ODL_NCCL_OFF(T, pciPath, 8);              \
	ODL_NCCL_OFF(T, guid, 16);                \
	ODL_NCCL_OFF(T, ptrSupport, 24);          \
	ODL_NCCL_OFF(T, regIsGlobal, 28);         \
	ODL_NCCL_OFF(T, forceFlush, 32);          \
	ODL_NCCL_OFF(T, speed, 36);               \
	ODL_NCCL_OFF(T, port, 40);                \
	ODL_NCCL_OFF(T, latency, 44);             \
	ODL_NCCL_OFF(T, maxComms, 48);            \
	ODL_NCCL_OFF(T, maxRecvs, 52);            \
	ODL_NCCL_OFF(T, netDeviceType, 56);       \
	ODL_NCCL_OFF(T, netDeviceVersion, 60);    \
	ODL_NCCL_OFF(T, vProps, 64)
ODL_NCCL_PROPS_V9_OFFS(ncclNetProperties_v9_t);
ODL_NCCL_OFF(ncclNetProperties_v9_t, maxP2pBytes, 88);
ODL_NCCL_OFF(ncclNetProperties_v9_t, maxCollBytes, 96);
ODL_NCCL_SIZE(ncclNetCommConfig_v10_t, 4);

#define ODL_NCCL_SLOTS_COMMON(T)                 \
	ODL_NCCL_OFF(T, name, 0);                \
	ODL_NCCL_OFF(T, init, 8);                \
	ODL_NCCL_OFF(T, devices, 16);            \
	ODL_NCCL_OFF(T, getProperties, 24);      \
	ODL_NCCL_OFF(T, listen, 32);             \
	ODL_NCCL_OFF(T, connect, 40);            \
	ODL_NCCL_OFF(T, accept, 48);             \
	ODL_NCCL_OFF(T, regMr, 56);              \
	ODL_NCCL_OFF(T, regMrDmaBuf, 64);        \
	ODL_NCCL_OFF(T, deregMr, 72);            \
	ODL_NCCL_OFF(T, isend, 80);              \
	ODL_NCCL_OFF(T, irecv, 88);              \
	ODL_NCCL_OFF(T, iflush, 96);             \
	ODL_NCCL_OFF(T, test, 104);              \
	ODL_NCCL_OFF(T, closeSend, 112);         \
	ODL_NCCL_OFF(T, closeRecv, 120);         \
	ODL_NCCL_OFF(T, closeListen, 128);       \
	ODL_NCCL_OFF(T, getDeviceMr, 136);       \
	ODL_NCCL_OFF(T, irecvConsumed, 144)

ODL_NCCL_SIZE(ncclNet_v7_t, 152);
ODL_NCCL_SLOTS_COMMON(ncclNet_v7_t);
ODL_NCCL_SIZE(ncclNet_v8_t, 152);
ODL_NCCL_SLOTS_COMMON(ncclNet_v8_t);
ODL_NCCL_SIZE(ncclNet_v9_t, 160);
ODL_NCCL_SLOTS_COMMON(ncclNet_v9_t);
ODL_NCCL_OFF(ncclNet_v9_t, makeVDevice, 152);
ODL_NCCL_SIZE(ncclNet_v10_t, 160);
ODL_NCCL_SLOTS_COMMON(ncclNet_v10_t);
ODL_NCCL_OFF(ncclNet_v10_t, makeVDevice, 152);

ODL_NCCL_SIZE(ncclNetProperties_v11_t, 112);
ODL_NCCL_PROPS_V9_OFFS(ncclNetProperties_v11_t);
ODL_NCCL_OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
ODL_NCCL_OFF(ncclNetProperties_v11_t, maxCollBytes, 96);
ODL_NCCL_OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);
ODL_NCCL_SIZE(ncclNetCommAttr_v11_t, 16);
ODL_NCCL_SIZE(ncclNetAttr_v11_t, 44);
ODL_NCCL_OFF(ncclNetAttr_v11_t, recvCommAttr, 16);
ODL_NCCL_OFF(ncclNetAttr_v11_t, op, 32);
ODL_NCCL_OFF(ncclNetAttr_v11_t, algo, 36);
ODL_NCCL_OFF(ncclNetAttr_v11_t, proto, 40);
/* the 22 slots of v11 and v12 */
#define ODL_NCCL_SLOTS_V11(T)                    \
	ODL_NCCL_SIZE(T, 176);                   \
	ODL_NCCL_SLOTS_COMMON(T);                \
	ODL_NCCL_OFF(T, makeVDevice, 152);       \
	ODL_NCCL_OFF(T, finalize, 160);          \
	ODL_NCCL_OFF(T, setNetAttr, 168)
ODL_NCCL_SLOTS_V11(ncclNet_v11_t);

ODL_NCCL_SIZE(ncclNetVDeviceProps_v12_t, 36);
ODL_NCCL_SIZE(ncclNetProperties_v12_t, 128);
ODL_NCCL_PROPS_V9_OFFS(ncclNetProperties_v12_t);
ODL_NCCL_OFF(ncclNetProperties_v12_t, maxP2pBytes, 104);
ODL_NCCL_OFF(ncclNetProperties_v12_t, maxCollBytes, 112);
ODL_NCCL_OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
ODL_NCCL_OFF(ncclNetProperties_v12_t, railId, 124);
ODL_NCCL_OFF(ncclNetProperties_v12_t, planeId, 126);
ODL_NCCL_SLOTS_V11(ncclNet_v12_t);

#ifdef __cplusplus
}
#endif
#endif /* ODL_NCCL_NET_H */
