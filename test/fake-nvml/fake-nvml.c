/*
 * fake-nvml.c: a fake libnvidia-ml.so.1 for gpu-sentinel's tests.
 *
 * It exports the NVML symbols the agent binds, with the real C signatures and the x86-64 struct
 * layouts of docs/nvml.md §3-§1.4, and answers like an 8-GPU AWS server.
 *
 * Built by test/setup/global-setup.ts:
 *   gcc -shared -fPIC -O2 -o test/.build/libnvidia-ml.so.1 fake-nvml.c
 *   gcc -shared -fPIC -O2 -DFAKE_NVML_LEGACY -o test/.build/legacy/libnvidia-ml.so.1 fake-nvml.c
 * The legacy build lacks nvmlDeviceGetMemoryInfo_v2, nvmlSystemGetCudaDriverVersion_v2 and
 * nvmlDeviceGetCurrentClocksEventReasons, as older drivers do, so the agent's fallbacks run.
 * Link with -pthread: nvmlEventSetWait_v2 runs on a libuv pool thread (koffi .async) while the
 * main thread calls everything else, so the shared state it touches is behind a mutex.
 *
 * Settings (environment, all read again at every nvmlInit_v2, so a test changes them between
 * NvmlSource.open() and close()):
 *   FAKE_NVML_PRESET          p5 (default: 8x H100 80GB HBM3, values from the real capture
 *                             test/fixtures/real/nvidia-smi-query.535.161.08.out.0.valid.txt)
 *                             or p4d (8x A100-SXM4-40GB, 400 W)
 *   FAKE_NVML_GPU_COUNT       GPUs to expose, 0..64 (default 8); GPU i beyond the preset's 8 repeats
 *                             row i % 8 with its own UUID and serial (last two digits: i) and
 *                             PCI domain i / 8 (benchmarks of large hosts)
 *   FAKE_NVML_LOST_GPU        index of a GPU whose device calls answer GPU_IS_LOST (15)
 *   FAKE_NVML_NOT_SUPPORTED   comma-separated function names answering NOT_SUPPORTED (3)
 *   FAKE_NVML_FAIL_CALL       comma-separated function names answering UNKNOWN (999)
 *   FAKE_NVML_UTIL_GPU        utilization.gpu in percent, 0..100 (default 0: idle)
 *   FAKE_NVML_DBE_VOLATILE    volatile uncorrected ECC count on every GPU (default 0)
 *   FAKE_NVML_PROCESSES       running compute processes per GPU (default 0); process k of GPU i
 *                             has pid 4000 + 100*i + k and (256 + 128*k) MiB
 *   FAKE_NVML_PROCESS_MEMORY_UNAVAILABLE
 *                             the first N processes of each GPU report usedGpuMemory
 *                             NVML_VALUE_NOT_AVAILABLE (default 0)
 *   FAKE_NVML_CLOCKS_EVENT_REASONS
 *                             clocks-event reasons bitmask (default p5: 0x88 HwSlowdown |
 *                             HwPowerBrake as in the real capture; p4d: 0x1 GpuIdle)
 *   FAKE_NVML_POWER_VIOLATION_PCT
 *                             share of the time, percent 0..100, that nvmlDeviceGetViolationStatus
 *                             (NVML_PERF_POLICY_POWER) counts as power-capped: violationTime grows
 *                             by pct/100 ns per ns of monotonic time since init, from a base of
 *                             pct/100 x 1 h (default 0: never capped); other policies: NOT_SUPPORTED
 *   FAKE_NVML_UNSUPPORTED_FIELDS
 *                             comma-separated field ids nvmlDeviceGetFieldValues answers
 *                             NOT_SUPPORTED for (per value)
 *   FAKE_NVML_PCIE_REPLAY     PCIe replay counter on every GPU (default: the capture's per-GPU values)
 *   FAKE_NVML_RETIRED_PAGES_PENDING
 *                             unset: nvmlDeviceGetRetiredPagesPendingStatus answers NOT_SUPPORTED
 *                             (as on A100/H100, where rows are remapped instead); 0 or 1: the flag
 *   FAKE_NVML_SM_ACTIVE       GPM SM_UTIL percent (default 0); SM_OCCUPANCY is half of it
 *   FAKE_NVML_TENSOR_ACTIVE   GPM ANY_TENSOR_UTIL percent (default 0)
 *   FAKE_NVML_GPM_FAIL_GPU    index of a GPU whose nvmlGpmQueryDeviceSupport answers UNKNOWN (999)
 *   FAKE_NVML_MIG_GPU         the MIG preset: index of a GPU (an H100 on p5) in MIG mode
 *                             (nvmlDeviceGetMigMode current = pending = 1; every other GPU 0) with
 *                             three GPU instances: id 1 3g.40gb (two compute instances, MIG devices 0
 *                             and 1), id 5 2g.20gb (MIG device 3), id 6 2g.20gb (MIG device 4, idle);
 *                             indexes 2, 5, 6 answer NOT_FOUND. Each instance has its own memory used
 *                             and GPM ratios (see LAYOUT_3G_2X2G); the parent's utilization answers
 *                             NOT_SUPPORTED, as on a real MIG GPU
 *   FAKE_NVML_XID_EVENTS      comma list of gpu:xid (or gpu:dbe for a DoubleBitEccError), queued
 *                             at init and delivered one per nvmlEventSetWait_v2 call, in order,
 *                             to a set the GPU registered that event type with
 *   FAKE_NVML_INIT_FAIL       any non-empty value: nvmlInit_v2 answers DRIVER_NOT_LOADED (9)
 *   FAKE_NVML_CALL_COST       h200-580: every call busy-spins on the calling thread's CPU clock for
 *                             what that call cost on a real H200 with driver 580.159.04 (the table
 *                             H200_580_COSTS below, each figure with its source; field values per
 *                             requested id). Unset (default) or any other value: calls are free (≈ 1 us).
 *                             A CPU-time model only: no latency beyond the spin, no driver threads,
 *                             no cost that grows with load or GPU count, no memory (see the next knob)
 *   FAKE_NVML_INIT_RSS_MB     heap in MiB that nvmlInit_v2 (0->1) allocates and touches, as the real
 *                             library's own memory: 18 reproduces the H200's ≈ 17.8 MiB (python3 RSS
 *                             16,332 -> 34,564 kB at nvmlInit_v2, bench/nvml.txt lines 5-9) (default 0)
 *
 * nvmlInit_v2 / nvmlShutdown are reference-counted as in the real library: the knobs are read and
 * the call counters reset when the count goes from 0 to 1 (two users in one process, e.g. the
 * source and the event watcher, share one state).
 *
 * Presets: GPM is supported on p5 (Hopper), not on p4d (isSupportedDevice = 0, as on A100).
 *
 * Test helpers (not NVML): fakeNvmlCallCount(name) counts calls per function since init;
 * fakeNvmlSetLostGpu(index) makes a GPU fall off the bus mid-run (-1: none);
 * fakeNvmlSetMigLayout(gpu, layout, staleCode) re-partitions a GPU mid-run (MIG off, or another
 * set of GPU instances), old MIG device handles answering staleCode;
 * fakeNvmlSetClock(ms) makes the time-driven counters follow a virtual clock (ms < 0: the real one);
 * fakeNvmlInjectXid(gpu, xid) and fakeNvmlInjectEvent(gpu, eventType, eventData) queue an event
 * for the next nvmlEventSetWait_v2 (thread-safe); fakeNvmlFieldRequests(fieldId) counts how often
 * a field id was requested.
 */
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

#define MAX_GPUS 64
/* Rows per preset: a real 8-GPU server; GPUs past it repeat them (see FAKE_NVML_GPU_COUNT). */
#define PRESET_GPUS 8

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* Layout checks against gpu.md §1.4: the fake must be as wrong or right as the real thing. */
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t is 24 bytes");

typedef struct fake_device {
  int index;
} *nvmlDevice_t;

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  unsigned int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct fake_event_set {
  unsigned long long registered[MAX_GPUS];
} *nvmlEventSet_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct fake_gpm_sample {
  int device_index;
  int gi_id; /* -1: the whole GPU (nvmlGpmSampleGet); else the GPU instance (nvmlGpmMigSampleGet) */
  unsigned long long seq;
} *nvmlGpmSample_t;

typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName;
    char *longName;
    char *unit;
  } metricInfo;
} nvmlGpmMetric_t;

/* NVML_GPM_METRIC_MAX of the API 13 header; the API 11 header had 98 under the same version 1. */
#define NVML_GPM_METRIC_MAX 333

typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t is 8 bytes");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t is 40 bytes");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 13344, "nvmlGpmMetricsGet_t is 13,344 bytes");

typedef struct {
  const char *uuid;
  const char *serial;
  unsigned int bus;
  unsigned int dev;
  unsigned int power_idle_mw;
  unsigned int temp_c;
  unsigned int mem_temp_c;
  unsigned int pcie_replay;
} gpu_row;

typedef struct {
  const char *name;
  const char *driver;
  const char *nvml;
  int cuda;
  unsigned long long total_mib;
  unsigned long long reserved_mib;
  unsigned int limit_mw;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  unsigned int sm_idle_mhz;
  unsigned int sm_busy_mhz;
  unsigned int mem_mhz;
  unsigned int gpm_supported;
  unsigned long long clocks_event_reasons;
  unsigned int threshold_c[4]; /* SHUTDOWN, SLOWDOWN, MEM_MAX, GPU_MAX */
  unsigned int nvlink_links;
  gpu_row gpus[PRESET_GPUS];
} preset;

/* p5.48xlarge: every per-GPU value is from the real nvidia-smi -q capture (driver 535.161.08). */
static const preset P5 = {
    "NVIDIA H100 80GB HBM3", "535.161.08", "12.535.161.08", 12020, 81559, 551, 700000,
    0x233010DE, 0x16C110DE, 86, 1980, 2619,
    /* GPM on Hopper; event reasons, memory temperature and replays from the capture; thresholds
       assumed (the capture prints only T.Limit margins: -8 / -2 / 0 around a limit of 85 C). */
    1, 0x88, {92, 87, 95, 85}, 18,
    {
        {"GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa", "1650124031592", 0x19, 0x00, 67740, 29, 39, 67},
        {"GPU-47daa2ad-a218-6286-252b-af45f0dfaf00", "1650124008135", 0x3B, 0x00, 69520, 29, 38, 63},
        {"GPU-167d8376-ee13-fca4-938a-a05167c43cdc", "1650124047722", 0x4C, 0x00, 70550, 30, 38, 52},
        {"GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99", "1650124032506", 0x5D, 0x00, 71370, 30, 38, 43},
        {"GPU-2b6f61f9-8b00-3b57-d912-b62792120662", "1650124030635", 0x9B, 0x00, 70330, 31, 38, 49},
        {"GPU-980ea11b-91dc-db7b-72ac-0685abc43658", "1650124048576", 0xBB, 0x00, 70210, 32, 39, 53},
        {"GPU-4ef109e9-e925-4834-2b85-0771b4ef696c", "1650124047010", 0xCB, 0x00, 71050, 32, 40, 82},
        {"GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5", "1650124007084", 0xDB, 0x00, 72270, 31, 38, 67},
    },
};

/* p4d.24xlarge: the AWS PCI topology (buses 10/20/90/a0, devices 1c/1d); UUIDs and serials made up. */
static const preset P4D = {
    "NVIDIA A100-SXM4-40GB", "550.90.07", "12.550.90.07", 12040, 40960, 0, 400000,
    0x20B010DE, 0x134F10DE, 210, 1410, 1215,
    /* No GPM on Ampere; thresholds as A100 SXM4 boards commonly report them (assumed). */
    0, 0x1, {92, 89, 95, 85}, 12,
    {
        {"GPU-a1000000-0000-4000-8000-000000000000", "1322621000000", 0x10, 0x1C, 52000, 27, 33, 0},
        {"GPU-a1000001-0000-4000-8000-000000000001", "1322621000001", 0x10, 0x1D, 53000, 28, 34, 0},
        {"GPU-a1000002-0000-4000-8000-000000000002", "1322621000002", 0x20, 0x1C, 54000, 28, 34, 0},
        {"GPU-a1000003-0000-4000-8000-000000000003", "1322621000003", 0x20, 0x1D, 55000, 29, 35, 0},
        {"GPU-a1000004-0000-4000-8000-000000000004", "1322621000004", 0x90, 0x1C, 56000, 29, 35, 0},
        {"GPU-a1000005-0000-4000-8000-000000000005", "1322621000005", 0x90, 0x1D, 57000, 30, 36, 0},
        {"GPU-a1000006-0000-4000-8000-000000000006", "1322621000006", 0xA0, 0x1C, 58000, 30, 36, 0},
        {"GPU-a1000007-0000-4000-8000-000000000007", "1322621000007", 0xA0, 0x1D, 59000, 31, 37, 0},
    },
};

static struct fake_device devices[MAX_GPUS];
static const preset *active = &P5;
static int initialized = 0;
static unsigned int gpu_count = PRESET_GPUS;
static int lost_gpu = -1;
static char not_supported[512];
static char fail_call[512];
static unsigned int util_gpu = 0;
static unsigned long long dbe_volatile = 0;
static unsigned int processes = 0;
static unsigned int processes_memory_na = 0;
static unsigned long long clocks_event_reasons = 0;
static char unsupported_fields[512];
static unsigned int power_violation_pct = 0;
static long long pcie_replay = -1;   /* -1: the preset's per-GPU value */
static int retired_pending = -1;     /* -1: NOT_SUPPORTED */
static unsigned int sm_active_pct = 0;
static unsigned int tensor_active_pct = 0;
static int gpm_fail_gpu = -1;
static int mig_gpu = -1;
static void reset_mig_layout(void); /* the preset layout, at every init (defined with the MIG calls) */
static double t0_s = 0;

/* Guards the call counters and the event queue: nvmlEventSetWait_v2 runs on another thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Signalled when an event is queued or a GPU is marked lost: waiters block like the driver does, using no CPU. */
static pthread_cond_t event_cond = PTHREAD_COND_INITIALIZER;

/* ---------------------------------------------------------------- call cost model (FAKE_NVML_CALL_COST) */

/*
 * What one call of each entry point costs on the real driver, in CPU nanoseconds: with
 * FAKE_NVML_CALL_COST=h200-580 every call busy-spins on the calling thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) that long, as the real driver's calls spin (wall = CPU time there).
 * Measured on one H200, driver 580.159.04 (sources, in test/fixtures/captured/h200-driver-580.159.04/):
 *   [P] BENCHMARKS.md, section "the agent's NVML calls on a real H200", table "CPU a call":
 *       python3 ctypes, process CPU time, 100 energy calls and 400 of the others after 20 warm-up
 *       (test/bench/nvml-call-cost.py); the raw output was not kept, that table is the record
 *   [N] bench/nvml.txt, the line given: python3 ctypes, mean wall time of 2000 calls (= CPU time on
 *       this driver, [P] says)
 *   [C] bench/cpu-profile.txt line 7: the agent's GPM reader, nvmlGpmSampleGet + nvmlGpmMetricsGet,
 *       66.7 ms of self time over 150 polls = 444.7 us a poll; the profile does not split the two
 *       (koffi calls are booked to their JS caller), so nvmlGpmSampleGet takes its python figure [N]
 *       and nvmlGpmMetricsGet the rest (391.5 us)
 */
typedef struct {
  const char *fn;
  long long ns;
} call_cost;

static const call_cost H200_580_COSTS[] = {
    {"nvmlDeviceGetTotalEnergyConsumption", 3901000}, /* [P] 3,901 us */
    {"nvmlDeviceGetViolationStatus", 714000},         /* [P] 714 us (NVML_PERF_POLICY_POWER) */
    {"nvmlDeviceGetPcieReplayCounter", 151000},       /* [P] 151 us */
    {"nvmlDeviceGetRemappedRows", 2600},              /* [P] 2.6 us */
    {"nvmlDeviceGetTotalEccErrors", 2200},            /* [P] 2.2 us */
    {"nvmlDeviceGetEnforcedPowerLimit", 1500},        /* [P] 1.5 us */
    {"nvmlDeviceGetUtilizationRates", 1300},          /* [N] line 17: 1.3 us */
    {"nvmlDeviceGetPowerUsage", 1400},                /* [N] line 18: 1.4 us */
    {"nvmlDeviceGetMemoryInfo", 7500},                /* [N] line 19: 7.5 us */
    {"nvmlDeviceGetMemoryInfo_v2", 7500},             /* [N] line 19 (the _v2 twin, not measured apart) */
    {"nvmlDeviceGetTemperature", 1500},               /* [N] line 20: 1.5 us */
    {"nvmlGpmSampleGet", 53200},                      /* [N] line 22: 53.2 us */
    {"nvmlGpmMetricsGet", 391500},                    /* [C] 444.7 - 53.2 us */
    {"nvmlDeviceGetFieldValues", 0},                  /* per requested id: field_cost_ns() */
};

/* Every entry point not in the table: 1.5 us, the median of the instant readings measured above
 * (1.3-7.5 us). Not measured: nvmlInit_v2, clocks, clocks-event reasons, processes, MIG, events. */
#define COST_DEFAULT_NS 1500LL

/*
 * nvmlDeviceGetFieldValues costs the sum of its requested ids' costs [P]: 82 (HBM temperature)
 * 2.7 us, 198 / 197 (PCIe RX / TX bytes) 137 / 138 us; the four NVLink ids 38, 45, 138, 139
 * (NOT_SUPPORTED on that H200: no NVLink peers) (472 - 277) / 4 = 48.75 us each, from "all 7 ids
 * 472 us" less "[82, 197, 198] 277 us". The sums reproduce [P]'s [82, 197, 198] 277 us (model
 * 277.7) and [82, 198] 147 us (model 139.7). Any other id: 2.7 us, as the one plain reading measured.
 */
static long long field_cost_ns(unsigned int id) {
  switch (id) {
    case 82: return 2700;
    case 197: return 138000;
    case 198: return 137000;
    case 38:
    case 45:
    case 138:
    case 139: return 48750;
    default: return 2700;
  }
}

/* 1 while FAKE_NVML_CALL_COST=h200-580 (read at nvmlInit_v2 0->1); 0: every call is free. */
static int call_cost_on = 0;

static long long thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy-spins `ns` nanoseconds of this thread's CPU time (not wall time: a descheduled thread spends none). */
static void spend_ns(long long ns) {
  if (ns <= 0) return;
  long long end = thread_cpu_ns() + ns;
  while (thread_cpu_ns() < end) {
  }
}

/* Spends the model's cost of one call of `fn` (nothing when the model is off). */
static void spend_call(const char *fn) {
  if (!call_cost_on) return;
  for (size_t i = 0; i < sizeof H200_580_COSTS / sizeof H200_580_COSTS[0]; i++) {
    if (H200_580_COSTS[i].fn == fn || strcmp(H200_580_COSTS[i].fn, fn) == 0) {
      spend_ns(H200_580_COSTS[i].ns);
      return;
    }
  }
  spend_ns(COST_DEFAULT_NS);
}

/* FAKE_NVML_INIT_RSS_MB: heap touched at nvmlInit_v2 (0->1), as the real NVML's own ~18 MiB; kept until the next init. */
static char *init_rss = NULL;

static void touch_init_rss(unsigned long long mb) {
  free(init_rss);
  init_rss = NULL;
  if (mb == 0) return;
  size_t bytes = (size_t)mb * 1024 * 1024;
  init_rss = malloc(bytes);
  if (init_rss != NULL) memset(init_rss, 0xa5, bytes);
}

/* Call counters: one slot per distinct function name. */
#define MAX_COUNTERS 64
static const char *counter_names[MAX_COUNTERS];
static int counter_values[MAX_COUNTERS];
static int counter_used = 0;

static void count_call(const char *fn) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < counter_used; i++) {
    if (counter_names[i] == fn || strcmp(counter_names[i], fn) == 0) {
      counter_values[i]++;
      pthread_mutex_unlock(&lock);
      spend_call(fn);
      return;
    }
  }
  if (counter_used < MAX_COUNTERS) {
    counter_names[counter_used] = fn;
    counter_values[counter_used] = 1;
    counter_used++;
  }
  pthread_mutex_unlock(&lock);
  spend_call(fn);
}

/** Calls of `fn` since the last nvmlInit_v2 (test helper, not NVML). */
int fakeNvmlCallCount(const char *fn) {
  int n = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < counter_used; i++) {
    if (strcmp(counter_names[i], fn) == 0) n = counter_values[i];
  }
  pthread_mutex_unlock(&lock);
  return n;
}

/** Makes GPU `index` answer GPU_IS_LOST from now on; -1 heals every GPU (test helper, not NVML). */
void fakeNvmlSetLostGpu(int index) {
  pthread_mutex_lock(&lock);
  lost_gpu = index;
  pthread_cond_broadcast(&event_cond);
  pthread_mutex_unlock(&lock);
}

/* True when `fn` is one of the comma-separated names in `list`. */
static int listed(const char *list, const char *fn) {
  size_t n = strlen(fn);
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, fn, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

static nvmlReturn_t enter(const char *fn) {
  count_call(fn);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (listed(not_supported, fn)) return NVML_ERROR_NOT_SUPPORTED;
  if (listed(fail_call, fn)) return NVML_ERROR_UNKNOWN;
  return NVML_SUCCESS;
}

/* A lost GPU answers GPU_IS_LOST to everything, before any per-function knob, as the driver does. */
static nvmlReturn_t enter_device(const char *fn, nvmlDevice_t d) {
  count_call(fn);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (d == NULL || d < devices || d >= devices + gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->index == lost_gpu) return NVML_ERROR_GPU_IS_LOST;
  if (listed(not_supported, fn)) return NVML_ERROR_NOT_SUPPORTED;
  if (listed(fail_call, fn)) return NVML_ERROR_UNKNOWN;
  return NVML_SUCCESS;
}

#define ENTER(fn)                       \
  do {                                  \
    nvmlReturn_t r_ = enter(fn);        \
    if (r_ != NVML_SUCCESS) return r_;  \
  } while (0)
#define ENTER_DEVICE(fn, d)                     \
  do {                                          \
    nvmlReturn_t r_ = enter_device((fn), (d));  \
    if (r_ != NVML_SUCCESS) return r_;          \
  } while (0)

/* fakeNvmlSetClock: the time the fake's counters follow, ms since the epoch; < 0: the real clocks. */
static volatile double virtual_ms = -1;

static double monotonic_s(void) {
  if (virtual_ms >= 0) return virtual_ms / 1e3;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * Makes the fake's time-driven values (energy, violation and field counters, field timestamps) follow
 * `ms` (ms since the epoch) instead of the real clocks, for an agent driven on a virtual clock;
 * a negative `ms` goes back to the real clocks. Not reset by nvmlInit_v2 (test helper, not NVML).
 */
void fakeNvmlSetClock(double ms) { virtual_ms = ms; }

static unsigned long long env_ull(const char *name, unsigned long long fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') return fallback;
  return strtoull(v, NULL, 10);
}

static void env_str(const char *name, char *out, size_t size) {
  const char *v = getenv(name);
  snprintf(out, size, "%s", v ? v : "");
}

/* The preset row GPU i repeats. */
static const gpu_row *row_of(unsigned int i) { return &active->gpus[i % PRESET_GPUS]; }

/* A row's string with its last two characters replaced by GPU i's number past the preset's GPUs. */
static nvmlReturn_t copy_numbered(const char *src, unsigned int i, const char *format, char *dst, unsigned int length);

static unsigned int power_mw(int i) {
  const gpu_row *g = row_of((unsigned int)i);
  /* Idle draw plus a share of the headroom proportional to utilization. */
  unsigned int busy = active->limit_mw * 9 / 10;
  return g->power_idle_mw + (busy - g->power_idle_mw) * util_gpu / 100;
}

static nvmlReturn_t copy_string(const char *src, char *dst, unsigned int length) {
  if (dst == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(src) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(dst, src, strlen(src) + 1);
  return NVML_SUCCESS;
}

static nvmlReturn_t copy_numbered(const char *src, unsigned int i, const char *format, char *dst, unsigned int length) {
  if (i < PRESET_GPUS) return copy_string(src, dst, length);
  char buf[96];
  size_t n = strlen(src);
  snprintf(buf, sizeof buf, "%s", src);
  if (n >= 2 && n < sizeof buf) snprintf(buf + n - 2, 3, format, i % 100);
  return copy_string(buf, dst, length);
}

/* ---------------------------------------------------------------- lifecycle, system */

static void reset_events(void);
static void queue_env_events(void);
#define MAX_FIELD_ID 512
static int field_requests[MAX_FIELD_ID];

nvmlReturn_t nvmlInit_v2(void) {
  if (initialized > 0) {
    count_call("nvmlInit_v2");
    initialized++;
    return NVML_SUCCESS;
  }
  pthread_mutex_lock(&lock);
  counter_used = 0;
  pthread_mutex_unlock(&lock);
  count_call("nvmlInit_v2");
  const char *fail = getenv("FAKE_NVML_INIT_FAIL");
  if (fail != NULL && *fail != '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
  const char *p = getenv("FAKE_NVML_PRESET");
  active = (p != NULL && strcmp(p, "p4d") == 0) ? &P4D : &P5;
  gpu_count = (unsigned int)env_ull("FAKE_NVML_GPU_COUNT", PRESET_GPUS);
  if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
  const char *lost = getenv("FAKE_NVML_LOST_GPU");
  lost_gpu = (lost != NULL && *lost != '\0') ? atoi(lost) : -1;
  env_str("FAKE_NVML_NOT_SUPPORTED", not_supported, sizeof not_supported);
  env_str("FAKE_NVML_FAIL_CALL", fail_call, sizeof fail_call);
  util_gpu = (unsigned int)env_ull("FAKE_NVML_UTIL_GPU", 0);
  if (util_gpu > 100) util_gpu = 100;
  dbe_volatile = env_ull("FAKE_NVML_DBE_VOLATILE", 0);
  processes = (unsigned int)env_ull("FAKE_NVML_PROCESSES", 0);
  processes_memory_na = (unsigned int)env_ull("FAKE_NVML_PROCESS_MEMORY_UNAVAILABLE", 0);
  const char *reasons = getenv("FAKE_NVML_CLOCKS_EVENT_REASONS");
  clocks_event_reasons = (reasons != NULL && *reasons != '\0') ? strtoull(reasons, NULL, 0)
                                                                : active->clocks_event_reasons;
  env_str("FAKE_NVML_UNSUPPORTED_FIELDS", unsupported_fields, sizeof unsupported_fields);
  power_violation_pct = (unsigned int)env_ull("FAKE_NVML_POWER_VIOLATION_PCT", 0);
  if (power_violation_pct > 100) power_violation_pct = 100;
  const char *replay = getenv("FAKE_NVML_PCIE_REPLAY");
  pcie_replay = (replay != NULL && *replay != '\0') ? atoll(replay) : -1;
  const char *pending = getenv("FAKE_NVML_RETIRED_PAGES_PENDING");
  retired_pending = (pending != NULL && *pending != '\0') ? (atoi(pending) != 0) : -1;
  sm_active_pct = (unsigned int)env_ull("FAKE_NVML_SM_ACTIVE", 0);
  tensor_active_pct = (unsigned int)env_ull("FAKE_NVML_TENSOR_ACTIVE", 0);
  const char *gpm_fail = getenv("FAKE_NVML_GPM_FAIL_GPU");
  gpm_fail_gpu = (gpm_fail != NULL && *gpm_fail != '\0') ? atoi(gpm_fail) : -1;
  const char *mig = getenv("FAKE_NVML_MIG_GPU");
  mig_gpu = (mig != NULL && *mig != '\0') ? atoi(mig) : -1;
  reset_mig_layout();
  for (int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
  reset_events();
  queue_env_events();
  memset(field_requests, 0, sizeof field_requests);
  const char *cost = getenv("FAKE_NVML_CALL_COST");
  call_cost_on = cost != NULL && strcmp(cost, "h200-580") == 0;
  touch_init_rss(env_ull("FAKE_NVML_INIT_RSS_MB", 0));
  t0_s = monotonic_s();
  initialized = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  count_call("nvmlShutdown");
  if (initialized <= 0) return NVML_ERROR_UNINITIALIZED;
  initialized--;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  ENTER("nvmlSystemGetDriverVersion");
  return copy_string(active->driver, version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  ENTER("nvmlSystemGetNVMLVersion");
  return copy_string(active->nvml, version, length);
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
  ENTER("nvmlSystemGetCudaDriverVersion_v2");
  if (cudaDriverVersion == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = active->cuda;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
  ENTER("nvmlSystemGetCudaDriverVersion");
  if (cudaDriverVersion == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = active->cuda;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  ENTER("nvmlDeviceGetCount_v2");
  if (deviceCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = gpu_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  ENTER("nvmlDeviceGetHandleByIndex_v2");
  if (device == NULL || index >= gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- identity */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  ENTER_DEVICE("nvmlDeviceGetName", device);
  return copy_string(active->name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  ENTER_DEVICE("nvmlDeviceGetUUID", device);
  return copy_numbered(row_of(device->index)->uuid, device->index, "%02x", uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length) {
  ENTER_DEVICE("nvmlDeviceGetSerial", device);
  return copy_numbered(row_of(device->index)->serial, device->index, "%02u", serial, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  ENTER_DEVICE("nvmlDeviceGetPciInfo_v3", device);
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const gpu_row *g = row_of(device->index);
  unsigned int domain = device->index / PRESET_GPUS;
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", domain, g->bus, g->dev);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", domain, g->bus, g->dev);
  pci->domain = domain;
  pci->bus = g->bus;
  pci->device = g->dev;
  pci->pciDeviceId = active->pci_device_id;
  pci->pciSubSystemId = active->pci_subsystem_id;
  return NVML_SUCCESS;
}

/* MIG instances (defined with the MIG calls below). */
typedef struct mig_row mig_row;
static const mig_row *mig_row_of(nvmlDevice_t d);
static int is_mig_handle(nvmlDevice_t d);
#ifndef FAKE_NVML_LEGACY
static nvmlReturn_t mig_memory_v2(nvmlDevice_t d, nvmlMemory_v2_t *memory);
#endif
static nvmlReturn_t mig_memory(nvmlDevice_t d, nvmlMemory_t *memory);
static unsigned long long gpm_seq; /* GPM sample sequence, shared by nvmlGpmSampleGet and nvmlGpmMigSampleGet */
static nvmlReturn_t mig_metrics_get(nvmlGpmMetricsGet_t *mg, int gi_id);

/* ---------------------------------------------------------------- metrics */

static unsigned long long used_bytes(void) {
  return (active->reserved_mib + (unsigned long long)processes * 1024ULL) << 20;
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  if (is_mig_handle(device)) return mig_memory_v2(device, memory);
  ENTER_DEVICE("nvmlDeviceGetMemoryInfo_v2", device);
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != (sizeof(nvmlMemory_v2_t) | (2u << 24))) return 25; /* ARGUMENT_VERSION_MISMATCH */
  memory->total = active->total_mib << 20;
  memory->reserved = active->reserved_mib << 20;
  memory->used = used_bytes();
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  if (is_mig_handle(device)) return mig_memory(device, memory);
  ENTER_DEVICE("nvmlDeviceGetMemoryInfo", device);
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = active->total_mib << 20;
  memory->used = used_bytes();
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  ENTER_DEVICE("nvmlDeviceGetUtilizationRates", device);
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->index == mig_gpu) return NVML_ERROR_NOT_SUPPORTED; /* per GPU instance only in MIG mode */
  utilization->gpu = util_gpu;
  utilization->memory = util_gpu / 2;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType, unsigned int *temp) {
  ENTER_DEVICE("nvmlDeviceGetTemperature", device);
  if (temp == NULL || sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = row_of(device->index)->temp_c + util_gpu / 4;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
  ENTER_DEVICE("nvmlDeviceGetPowerUsage", device);
  if (power == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *power = power_mw(device->index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit) {
  ENTER_DEVICE("nvmlDeviceGetEnforcedPowerLimit", device);
  if (limit == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *limit = active->limit_mw;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy) {
  ENTER_DEVICE("nvmlDeviceGetTotalEnergyConsumption", device);
  if (energy == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  /* mJ since "driver load": a large base (an hour at idle) plus power x monotonic time since init. */
  double elapsed_s = monotonic_s() - t0_s;
  unsigned long long base = 3600ULL * power_mw(device->index);
  *energy = base + (unsigned long long)(elapsed_s * (double)power_mw(device->index));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType, unsigned int counterType,
                                         unsigned long long *eccCounts) {
  ENTER_DEVICE("nvmlDeviceGetTotalEccErrors", device);
  if (eccCounts == NULL || errorType > 1 || counterType > 1) return NVML_ERROR_INVALID_ARGUMENT;
  /* errorType 1 = UNCORRECTED (DBE); counterType 0 = VOLATILE. Aggregate DBE includes the volatile ones. */
  *eccCounts = errorType == 1 ? dbe_volatile : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos) {
  ENTER_DEVICE("nvmlDeviceGetComputeRunningProcesses_v3", device);
  if (infoCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (*infoCount < processes) {
    *infoCount = processes;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (processes > 0 && infos == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < processes; i++) {
    infos[i].pid = 4000 + 100 * (unsigned int)device->index + i;
    infos[i].usedGpuMemory = i < processes_memory_na ? 0xFFFFFFFFFFFFFFFFULL : (256ULL + 128ULL * i) << 20;
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *infoCount = processes;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *clock) {
  ENTER_DEVICE("nvmlDeviceGetClockInfo", device);
  if (clock == NULL || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
  /* GRAPHICS=0, SM=1, MEM=2, VIDEO=3 */
  if (type == 2) *clock = active->mem_mhz;
  else *clock = util_gpu > 0 ? active->sm_busy_mhz : active->sm_idle_mhz;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                       unsigned int *isPending, unsigned int *failureOccurred) {
  ENTER_DEVICE("nvmlDeviceGetRemappedRows", device);
  if (corrRows == NULL || uncRows == NULL || isPending == NULL || failureOccurred == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *corrRows = 0;
  *uncRows = dbe_volatile > 0 ? 1 : 0;
  *isPending = dbe_volatile > 0 ? 1 : 0;
  *failureOccurred = 0;
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- clocks, PCIe, pages, thresholds */

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons) {
  ENTER_DEVICE("nvmlDeviceGetCurrentClocksEventReasons", device);
  if (reasons == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = clocks_event_reasons;
  return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons) {
  ENTER_DEVICE("nvmlDeviceGetCurrentClocksThrottleReasons", device);
  if (reasons == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = clocks_event_reasons;
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- violation time (power throttling) */

/* nvmlViolationTime_t: referenceTime (CPU timestamp, us) @0, violationTime (ns) @8 (docs/nvml.md §3). */
typedef struct {
  unsigned long long referenceTime;
  unsigned long long violationTime;
} fake_violation_time;

nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, unsigned int perfPolicyType,
                                          fake_violation_time *violTime) {
  ENTER_DEVICE("nvmlDeviceGetViolationStatus", device);
  if (violTime == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (perfPolicyType != 0) return NVML_ERROR_NOT_SUPPORTED; /* only NVML_PERF_POLICY_POWER */
  double elapsed_s = monotonic_s() - t0_s;
  double share = (double)power_violation_pct / 100.0;
  violTime->referenceTime = (unsigned long long)(monotonic_s() * 1e6);
  violTime->violationTime = (unsigned long long)((3600.0 + elapsed_s) * share * 1e9);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value) {
  ENTER_DEVICE("nvmlDeviceGetPcieReplayCounter", device);
  if (value == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *value = pcie_replay >= 0 ? (unsigned int)pcie_replay : row_of(device->index)->pcie_replay;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned int *isPending) {
  ENTER_DEVICE("nvmlDeviceGetRetiredPagesPendingStatus", device);
  if (isPending == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (retired_pending < 0) return NVML_ERROR_NOT_SUPPORTED;
  *isPending = (unsigned int)retired_pending;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned int thresholdType,
                                               unsigned int *temp) {
  ENTER_DEVICE("nvmlDeviceGetTemperatureThreshold", device);
  if (temp == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (thresholdType > 3) return NVML_ERROR_NOT_SUPPORTED;
  *temp = active->threshold_c[thresholdType];
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- field values */

/* field_requests (declared above nvmlInit_v2): requests per field id since init. */

/** How many times field `fieldId` was requested from nvmlDeviceGetFieldValues since init (test helper, not NVML). */
int fakeNvmlFieldRequests(unsigned int fieldId) { return fieldId < MAX_FIELD_ID ? field_requests[fieldId] : 0; }

static int field_unsupported(unsigned int id) {
  char name[16];
  snprintf(name, sizeof name, "%u", id);
  return listed(unsupported_fields, name);
}

static long long realtime_us(void) {
  if (virtual_ms >= 0) return (long long)(virtual_ms * 1e3);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Cumulative counter: a base plus rate x seconds since init, so it grows between samples. */
static unsigned long long grows(unsigned long long base, double per_s) {
  return base + (unsigned long long)((monotonic_s() - t0_s) * per_s);
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
  ENTER_DEVICE("nvmlDeviceGetFieldValues", device);
  if (values == NULL || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
  const gpu_row *g = row_of(device->index);
  int i = device->index;
  for (int k = 0; k < valuesCount; k++) {
    nvmlFieldValue_t *v = &values[k];
    if (v->fieldId < MAX_FIELD_ID) field_requests[v->fieldId]++;
    if (call_cost_on) spend_ns(field_cost_ns(v->fieldId));
    v->timestamp = realtime_us();
    v->latencyUsec = 0;
    v->nvmlReturn = NVML_SUCCESS;
    v->value.ullVal = 0;
    if (field_unsupported(v->fieldId)) {
      v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    switch (v->fieldId) {
      case 82: /* MEMORY_TEMP, C */
        v->valueType = 1;
        v->value.uiVal = g->mem_temp_c + util_gpu / 5;
        break;
      case 197: /* PCIE_COUNT_TX_BYTES: the capture's 3875 KB/s idle, more under load */
        v->valueType = 3;
        v->value.ullVal = grows(1000000000ULL * (unsigned long long)(i + 1), 3875.0 * 1024 + util_gpu * 1e8);
        break;
      case 198: /* PCIE_COUNT_RX_BYTES */
        v->valueType = 3;
        v->value.ullVal = grows(500000000ULL * (unsigned long long)(i + 1), 574.0 * 1024 + util_gpu * 2e8);
        break;
      case 138: /* NVLINK_THROUGHPUT_DATA_TX, KiB */
      case 139: /* NVLINK_THROUGHPUT_DATA_RX, KiB */
        if (v->scopeId != UINT_MAX && v->scopeId >= active->nvlink_links) {
          v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
          break;
        }
        v->valueType = 3;
        v->value.ullVal = grows(4000000ULL * (unsigned long long)(i + 1) + (v->fieldId == 139 ? 1000 : 0),
                                1024.0 + util_gpu * 1e5);
        if (v->scopeId != UINT_MAX) v->value.ullVal /= active->nvlink_links;
        break;
      case 38: /* NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL */
        v->valueType = 3;
        v->value.ullVal = (unsigned long long)i;
        break;
      case 45: /* NVLINK_CRC_DATA_ERROR_COUNT_TOTAL */
        v->valueType = 3;
        v->value.ullVal = 1;
        break;
      default:
        v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        break;
    }
  }
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- MIG */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
  ENTER_DEVICE("nvmlDeviceGetMigMode", device);
  if (currentMode == NULL || pendingMode == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *currentMode = device->index == mig_gpu ? 1u : 0u;
  *pendingMode = *currentMode;
  return NVML_SUCCESS;
}

/* nvmlDeviceAttributes_t, nvml.h API 13. */
typedef struct {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t is 40 bytes");

/* One MIG device (compute instance) of a MIG layout. */
struct mig_row {
  unsigned int index;       /* nvmlDeviceGetMigDeviceHandleByIndex index */
  unsigned int gi_id;       /* GPU instance id */
  unsigned int gi_slices;   /* gpuInstanceSliceCount */
  unsigned int ci_slices;   /* computeInstanceSliceCount */
  unsigned int sms;         /* multiprocessorCount */
  unsigned long long memory_mib; /* the GPU instance's memory (H100 80GB: 3g.40gb 40448, 2g.20gb 20096) */
  unsigned long long used_mib;   /* framebuffer used in the GPU instance */
  double gpm[5];            /* GRAPHICS_UTIL, SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL, % */
};

#define MIG_MAX_DEVICES 7
/* The preset, `3g+2x2g`: GPU instance 1 3g.40gb (two compute instances), 5 and 6 2g.20gb. */
static const struct mig_row LAYOUT_3G_2X2G[] = {
    {0, 1, 3, 2, 40, 40448, 12288, {80, 60, 30, 40, 50}},
    {1, 1, 3, 1, 20, 40448, 12288, {80, 60, 30, 40, 50}},
    {3, 5, 2, 2, 32, 20096, 4096, {40, 30, 15, 0, 20}},
    {4, 6, 2, 2, 32, 20096, 0, {0, 0, 0, 0, 0}},
};
/* `7x1g`: seven 1g.10gb instances, ids 7..13 as an H100 places them; instance 7+k is k*10 % busy. */
static const struct mig_row LAYOUT_7X1G[] = {
    {0, 7, 1, 1, 16, 9984, 1024, {0, 0, 0, 0, 0}},
    {1, 8, 1, 1, 16, 9984, 2048, {10, 10, 5, 0, 5}},
    {2, 9, 1, 1, 16, 9984, 3072, {20, 20, 10, 0, 10}},
    {3, 10, 1, 1, 16, 9984, 4096, {30, 30, 15, 0, 15}},
    {4, 11, 1, 1, 16, 9984, 5120, {40, 40, 20, 0, 20}},
    {5, 12, 1, 1, 16, 9984, 6144, {50, 50, 25, 0, 25}},
    {6, 13, 1, 1, 16, 9984, 7168, {60, 60, 30, 0, 30}},
};
/* `4g+3g`: instance 1 becomes a 4g.40gb (the preset's id 1 with another profile), 2 a 3g.40gb. */
static const struct mig_row LAYOUT_4G_3G[] = {
    {0, 1, 4, 4, 64, 40448, 20480, {90, 70, 35, 50, 60}},
    {1, 2, 3, 3, 48, 40448, 8192, {30, 20, 10, 5, 10}},
};

/* The MIG layout of the MIG GPU now (fakeNvmlSetMigLayout changes it mid-run). */
static const struct mig_row *mig_layout = LAYOUT_3G_2X2G;
static int mig_devices = 4;
/*
 * MIG device handles come from two pools used in turn: a re-partition moves to the other pool, so
 * a handle of the layout before answers `mig_stale_code` (as the driver invalidates the MIG device
 * handles of destroyed instances, nvml.h), while one from two layouts back is valid again (nvml.h:
 * "Handles may be reused and their properties can change in the process").
 */
static struct fake_device mig_handles[2][MIG_MAX_DEVICES];
static int mig_pool = 0;
static nvmlReturn_t mig_stale_code = 6; /* NOT_FOUND */

/* The layout row of a MIG device handle of the current pool; NULL for anything else. */
static const mig_row *mig_row_of(nvmlDevice_t d) {
  struct fake_device *pool = mig_handles[mig_pool];
  if (d == NULL || d < pool || d >= pool + mig_devices) return NULL;
  return &mig_layout[d - pool];
}

/* True for any MIG device handle the fake ever gave out, current or stale. */
static int is_mig_handle(nvmlDevice_t d) {
  return d != NULL && d >= &mig_handles[0][0] && d < &mig_handles[0][0] + 2 * MIG_MAX_DEVICES;
}

/* enter_device for a MIG device handle: its parent's loss and the per-function knobs apply. */
static nvmlReturn_t enter_mig(const char *fn, nvmlDevice_t d) {
  count_call(fn);
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (mig_gpu >= 0 && mig_gpu == lost_gpu) return NVML_ERROR_GPU_IS_LOST;
  if (is_mig_handle(d) && mig_row_of(d) == NULL) return mig_stale_code;
  if (mig_row_of(d) == NULL || mig_gpu < 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (listed(not_supported, fn)) return NVML_ERROR_NOT_SUPPORTED;
  if (listed(fail_call, fn)) return NVML_ERROR_UNKNOWN;
  return NVML_SUCCESS;
}

static void reset_mig_layout(void) {
  mig_layout = LAYOUT_3G_2X2G;
  mig_devices = (int)(sizeof LAYOUT_3G_2X2G / sizeof LAYOUT_3G_2X2G[0]);
  mig_stale_code = 6;
}

/**
 * Re-partitions GPU `gpu` mid-run, as nvidia-mig-manager does (test helper, not NVML): `none`
 * switches MIG mode off there, `3g+2x2g` (the preset), `7x1g` or `4g+3g` switch it on with that
 * layout. One GPU is in MIG mode at a time: another GPU's `none` changes nothing, a layout moves
 * MIG mode to `gpu`. Every MIG device handle given out before answers `staleCode` from now on.
 * Returns 0, or -1 for an unknown layout (nothing changed).
 */
int fakeNvmlSetMigLayout(int gpu, const char *layout, int staleCode) {
  const struct mig_row *rows = NULL;
  int count = 0;
  if (strcmp(layout, "3g+2x2g") == 0) {
    rows = LAYOUT_3G_2X2G;
    count = (int)(sizeof LAYOUT_3G_2X2G / sizeof LAYOUT_3G_2X2G[0]);
  } else if (strcmp(layout, "7x1g") == 0) {
    rows = LAYOUT_7X1G;
    count = (int)(sizeof LAYOUT_7X1G / sizeof LAYOUT_7X1G[0]);
  } else if (strcmp(layout, "4g+3g") == 0) {
    rows = LAYOUT_4G_3G;
    count = (int)(sizeof LAYOUT_4G_3G / sizeof LAYOUT_4G_3G[0]);
  } else if (strcmp(layout, "none") != 0) {
    return -1;
  }
  pthread_mutex_lock(&lock);
  mig_stale_code = staleCode;
  mig_pool = 1 - mig_pool;
  if (rows == NULL) {
    if (gpu == mig_gpu) mig_gpu = -1;
  } else {
    mig_gpu = gpu;
    mig_layout = rows;
    mig_devices = count;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
  ENTER_DEVICE("nvmlDeviceGetMaxMigDeviceCount", device);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = device->index == mig_gpu ? MIG_MAX_DEVICES : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice) {
  ENTER_DEVICE("nvmlDeviceGetMigDeviceHandleByIndex", device);
  if (migDevice == NULL || device->index != mig_gpu || index >= MIG_MAX_DEVICES) return NVML_ERROR_INVALID_ARGUMENT;
  for (int k = 0; k < mig_devices; k++) {
    if (mig_layout[k].index == index) {
      mig_handles[mig_pool][k].index = mig_gpu;
      *migDevice = &mig_handles[mig_pool][k];
      return NVML_SUCCESS;
    }
  }
  return 6; /* NOT_FOUND */
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
  nvmlReturn_t r = enter_mig("nvmlDeviceGetGpuInstanceId", device);
  if (r != NVML_SUCCESS) return r;
  if (id == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *id = mig_row_of(device)->gi_id;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes) {
  nvmlReturn_t r = enter_mig("nvmlDeviceGetAttributes_v2", device);
  if (r != NVML_SUCCESS) return r;
  if (attributes == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const mig_row *m = mig_row_of(device);
  memset(attributes, 0, sizeof *attributes);
  attributes->multiprocessorCount = m->sms;
  attributes->sharedCopyEngineCount = m->gi_slices;
  attributes->sharedDecoderCount = m->gi_slices / 2;
  attributes->sharedJpegCount = m->gi_slices / 3;
  attributes->gpuInstanceSliceCount = m->gi_slices;
  attributes->computeInstanceSliceCount = m->ci_slices;
  attributes->memorySizeMB = m->memory_mib;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
static nvmlReturn_t mig_memory_v2(nvmlDevice_t d, nvmlMemory_v2_t *memory) {
  nvmlReturn_t r = enter_mig("nvmlDeviceGetMemoryInfo_v2", d);
  if (r != NVML_SUCCESS) return r;
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != (sizeof(nvmlMemory_v2_t) | (2u << 24))) return 25; /* ARGUMENT_VERSION_MISMATCH */
  const mig_row *m = mig_row_of(d);
  memory->total = m->memory_mib << 20;
  memory->reserved = 0;
  memory->used = m->used_mib << 20;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}
#endif

static nvmlReturn_t mig_memory(nvmlDevice_t d, nvmlMemory_t *memory) {
  nvmlReturn_t r = enter_mig("nvmlDeviceGetMemoryInfo", d);
  if (r != NVML_SUCCESS) return r;
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const mig_row *m = mig_row_of(d);
  memory->total = m->memory_mib << 20;
  memory->used = m->used_mib << 20;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample) {
  ENTER_DEVICE("nvmlGpmMigSampleGet", device);
  if (gpmSample == NULL || device->index != mig_gpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (!active->gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  int found = 0;
  for (int k = 0; k < mig_devices; k++) found |= mig_layout[k].gi_id == gpuInstanceId;
  if (!found) return 6; /* NOT_FOUND */
  gpmSample->device_index = device->index;
  gpmSample->gi_id = (int)gpuInstanceId;
  gpmSample->seq = ++gpm_seq;
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- GPM */

static unsigned long long gpm_seq = 0;

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *support) {
  ENTER_DEVICE("nvmlGpmQueryDeviceSupport", device);
  if (support == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->index == gpm_fail_gpu) return NVML_ERROR_UNKNOWN;
  if (support->version != 1) return 25; /* ARGUMENT_VERSION_MISMATCH */
  support->isSupportedDevice = active->gpm_supported;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *sample) {
  ENTER("nvmlGpmSampleAlloc");
  if (sample == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *sample = calloc(1, sizeof(struct fake_gpm_sample));
  if (*sample == NULL) return 20; /* MEMORY */
  (*sample)->device_index = -1;
  (*sample)->gi_id = -1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  ENTER("nvmlGpmSampleFree");
  if (sample == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  free(sample);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  ENTER_DEVICE("nvmlGpmSampleGet", device);
  if (sample == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (!active->gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  sample->device_index = device->index;
  sample->gi_id = -1;
  sample->seq = ++gpm_seq;
  return NVML_SUCCESS;
}

static int gpm_metric(unsigned int id, double *value) {
  switch (id) {
    case 1: *value = util_gpu; return 1;                     /* GRAPHICS_UTIL */
    case 2: *value = sm_active_pct; return 1;                /* SM_UTIL */
    case 3: *value = sm_active_pct / 2.0; return 1;          /* SM_OCCUPANCY */
    case 5: *value = tensor_active_pct; return 1;            /* ANY_TENSOR_UTIL */
    case 10: *value = util_gpu / 2.0; return 1;              /* DRAM_BW_UTIL */
    case 11: *value = 0; return 1;                           /* FP64_UTIL */
    case 12: *value = sm_active_pct / 4.0; return 1;         /* FP32_UTIL */
    case 13: *value = tensor_active_pct / 8.0; return 1;     /* FP16_UTIL */
    case 20: *value = 3875.0 / 1024; return 1;               /* PCIE_TX_PER_SEC, MiB/s */
    case 21: *value = 574.0 / 1024; return 1;                /* PCIE_RX_PER_SEC, MiB/s */
    default: return 0;
  }
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg) {
  ENTER("nvmlGpmMetricsGet");
  if (mg == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (mg->version != 1) return 25; /* ARGUMENT_VERSION_MISMATCH */
  if (mg->numMetrics == 0 || mg->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlGpmSample_t s1 = mg->sample1, s2 = mg->sample2;
  if (s1 == NULL || s2 == NULL || s1->device_index < 0 || s1->device_index != s2->device_index || s2->seq <= s1->seq) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (s1->gi_id != s2->gi_id) return NVML_ERROR_INVALID_ARGUMENT;
  if (s1->gi_id >= 0) return mig_metrics_get(mg, s1->gi_id);
  for (unsigned int k = 0; k < mg->numMetrics; k++) {
    nvmlGpmMetric_t *m = &mg->metrics[k];
    m->metricInfo.shortName = NULL;
    m->metricInfo.longName = NULL;
    m->metricInfo.unit = NULL;
    m->value = 0;
    m->nvmlReturn = gpm_metric(m->metricId, &m->value) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

/* GPM metrics of two samples of one GPU instance (nvmlGpmMigSampleGet): the instance's ratios in the current layout. */
static nvmlReturn_t mig_metrics_get(nvmlGpmMetricsGet_t *mg, int gi_id) {
  const mig_row *m = NULL;
  for (int k = 0; k < mig_devices && m == NULL; k++)
    if ((int)mig_layout[k].gi_id == gi_id) m = &mig_layout[k];
  if (m == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  static const unsigned int ids[5] = {1, 2, 3, 5, 10};
  for (unsigned int k = 0; k < mg->numMetrics; k++) {
    nvmlGpmMetric_t *metric = &mg->metrics[k];
    metric->metricInfo.shortName = NULL;
    metric->metricInfo.longName = NULL;
    metric->metricInfo.unit = NULL;
    metric->value = 0;
    metric->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    for (int j = 0; j < 5; j++) {
      if (metric->metricId == ids[j]) {
        metric->value = m->gpm[j];
        metric->nvmlReturn = NVML_SUCCESS;
      }
    }
  }
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- events */

#define NVML_EVENT_TYPE_SUPPORTED 0xFULL /* SingleBitEcc | DoubleBitEcc | PState | XidCriticalError */
#define EVENT_QUEUE 256

static struct {
  int gpu;
  unsigned long long type;
  unsigned long long data;
} event_queue[EVENT_QUEUE];
static int event_head = 0;
static int event_tail = 0;

static void reset_events(void) {
  pthread_mutex_lock(&lock);
  event_head = event_tail = 0;
  pthread_mutex_unlock(&lock);
}

/** Queues an event for the next nvmlEventSetWait_v2 (test helper, not NVML); -1 when the queue is full. */
int fakeNvmlInjectEvent(unsigned int gpu, unsigned long long eventType, unsigned long long eventData) {
  int r = -1;
  pthread_mutex_lock(&lock);
  if (event_tail < EVENT_QUEUE) {
    event_queue[event_tail].gpu = (int)gpu;
    event_queue[event_tail].type = eventType;
    event_queue[event_tail].data = eventData;
    event_tail++;
    r = 0;
    pthread_cond_broadcast(&event_cond);
  }
  pthread_mutex_unlock(&lock);
  return r;
}

/** Queues an XidCriticalError (0x8) with code `xid` on GPU `gpu` (test helper, not NVML). */
int fakeNvmlInjectXid(unsigned int gpu, unsigned long long xid) { return fakeNvmlInjectEvent(gpu, 0x8ULL, xid); }

static void queue_env_events(void) {
  char list[1024];
  env_str("FAKE_NVML_XID_EVENTS", list, sizeof list);
  char *save = NULL;
  for (char *tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(tok, ':');
    if (colon == NULL) continue;
    unsigned int gpu = (unsigned int)strtoul(tok, NULL, 10);
    if (strcmp(colon + 1, "dbe") == 0) fakeNvmlInjectEvent(gpu, 0x2ULL, 0);
    else fakeNvmlInjectXid(gpu, strtoull(colon + 1, NULL, 10));
  }
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
  ENTER("nvmlEventSetCreate");
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *set = calloc(1, sizeof(struct fake_event_set));
  return *set == NULL ? 20 : NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  ENTER("nvmlEventSetFree");
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  free(set);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes) {
  ENTER_DEVICE("nvmlDeviceGetSupportedEventTypes", device);
  if (eventTypes == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *eventTypes = NVML_EVENT_TYPE_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
  ENTER_DEVICE("nvmlDeviceRegisterEvents", device);
  if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if ((eventTypes & ~NVML_EVENT_TYPE_SUPPORTED) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set->registered[device->index] |= eventTypes;
  return NVML_SUCCESS;
}

/* Pops the first queued event the set registered (events nobody registered are dropped). */
static int pop_event_locked(nvmlEventSet_t set, nvmlEventData_t *data) {
  int found = 0;
  while (event_head < event_tail && !found) {
    int gpu = event_queue[event_head].gpu;
    unsigned long long type = event_queue[event_head].type;
    if (gpu >= 0 && gpu < (int)gpu_count && (set->registered[gpu] & type) != 0) {
      data->device = &devices[gpu];
      data->eventType = type;
      data->eventData = event_queue[event_head].data;
      data->gpuInstanceId = 0xFFFFFFFFu;
      data->computeInstanceId = 0xFFFFFFFFu;
      found = 1;
    }
    event_head++;
  }
  return found;
}

/* Blocks up to `timeoutms` on a condition variable (no CPU while idle, like the driver's wait);
 * 0 answers at once; GPU_IS_LOST at once when a registered GPU is lost. */
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
  ENTER("nvmlEventSetWait_v2");
  if (set == NULL || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeoutms / 1000;
  deadline.tv_nsec += (long)(timeoutms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec += 1;
    deadline.tv_nsec -= 1000000000L;
  }
  nvmlReturn_t result = NVML_ERROR_TIMEOUT;
  pthread_mutex_lock(&lock);
  for (;;) {
    int lost = lost_gpu;
    if (lost >= 0 && lost < (int)gpu_count && set->registered[lost] != 0) {
      memset(data, 0, sizeof *data);
      data->device = &devices[lost];
      result = NVML_ERROR_GPU_IS_LOST;
      break;
    }
    if (pop_event_locked(set, data)) {
      result = NVML_SUCCESS;
      break;
    }
    /* A zero timeout polls, as the driver's poll() with 0 does: no sleep (a timed wait on an
     * expired deadline still sleeps for the timer slack, ~50-100 us). */
    if (timeoutms == 0) break;
    if (pthread_cond_timedwait(&event_cond, &lock, &deadline) == ETIMEDOUT) {
      if (pop_event_locked(set, data)) result = NVML_SUCCESS;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  return result;
}
