/*
 * fake-nvml.c: a fake libnvidia-ml.so.1 for gpu-sentinel's tests.
 *
 * It exports the NVML symbols the agent binds, with the real C signatures and the x86-64 struct
 * layouts of /work/shared/reference/gpu.md §1.3-§1.4, and answers like an 8-GPU AWS server.
 *
 * Built by test/setup/global-setup.ts:
 *   gcc -shared -fPIC -O2 -o test/.build/libnvidia-ml.so.1 fake-nvml.c
 *   gcc -shared -fPIC -O2 -DFAKE_NVML_LEGACY -o test/.build/legacy/libnvidia-ml.so.1 fake-nvml.c
 * The legacy build lacks nvmlDeviceGetMemoryInfo_v2 and nvmlSystemGetCudaDriverVersion_v2, as
 * drivers older than R510 do, so the agent's fallbacks run.
 *
 * Settings (environment, all read again at every nvmlInit_v2, so a test changes them between
 * NvmlSource.open() and close()):
 *   FAKE_NVML_PRESET          p5 (default: 8x H100 80GB HBM3, values from the real capture
 *                             test/fixtures/real/nvidia-smi-query.535.161.08.out.0.valid.txt)
 *                             or p4d (8x A100-SXM4-40GB, 400 W)
 *   FAKE_NVML_GPU_COUNT       GPUs to expose, 0..8 (default 8)
 *   FAKE_NVML_LOST_GPU        index of a GPU whose device calls answer GPU_IS_LOST (15)
 *   FAKE_NVML_NOT_SUPPORTED   comma-separated function names answering NOT_SUPPORTED (3)
 *   FAKE_NVML_FAIL_CALL       comma-separated function names answering UNKNOWN (999)
 *   FAKE_NVML_UTIL_GPU        utilization.gpu in percent, 0..100 (default 0: idle)
 *   FAKE_NVML_DBE_VOLATILE    volatile uncorrected ECC count on every GPU (default 0)
 *   FAKE_NVML_PROCESSES       running compute processes per GPU (default 0)
 *   FAKE_NVML_INIT_FAIL       any non-empty value: nvmlInit_v2 answers DRIVER_NOT_LOADED (9)
 *
 * Test helpers (not NVML): fakeNvmlCallCount(name) counts calls per function since the last
 * nvmlInit_v2; fakeNvmlSetLostGpu(index) makes a GPU fall off the bus mid-run (-1: none).
 */
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
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

#define MAX_GPUS 8

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

typedef struct {
  const char *uuid;
  const char *serial;
  unsigned int bus;
  unsigned int dev;
  unsigned int power_idle_mw;
  unsigned int temp_c;
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
  gpu_row gpus[MAX_GPUS];
} preset;

/* p5.48xlarge: every per-GPU value is from the real nvidia-smi -q capture (driver 535.161.08). */
static const preset P5 = {
    "NVIDIA H100 80GB HBM3", "535.161.08", "12.535.161.08", 12020, 81559, 551, 700000,
    0x233010DE, 0x16C110DE, 86, 1980, 2619,
    {
        {"GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa", "1650124031592", 0x19, 0x00, 67740, 29},
        {"GPU-47daa2ad-a218-6286-252b-af45f0dfaf00", "1650124008135", 0x3B, 0x00, 69520, 29},
        {"GPU-167d8376-ee13-fca4-938a-a05167c43cdc", "1650124047722", 0x4C, 0x00, 70550, 30},
        {"GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99", "1650124032506", 0x5D, 0x00, 71370, 30},
        {"GPU-2b6f61f9-8b00-3b57-d912-b62792120662", "1650124030635", 0x9B, 0x00, 70330, 31},
        {"GPU-980ea11b-91dc-db7b-72ac-0685abc43658", "1650124048576", 0xBB, 0x00, 70210, 32},
        {"GPU-4ef109e9-e925-4834-2b85-0771b4ef696c", "1650124047010", 0xCB, 0x00, 71050, 32},
        {"GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5", "1650124007084", 0xDB, 0x00, 72270, 31},
    },
};

/* p4d.24xlarge: the AWS PCI topology (buses 10/20/90/a0, devices 1c/1d); UUIDs and serials made up. */
static const preset P4D = {
    "NVIDIA A100-SXM4-40GB", "550.90.07", "12.550.90.07", 12040, 40960, 0, 400000,
    0x20B010DE, 0x134F10DE, 210, 1410, 1215,
    {
        {"GPU-a1000000-0000-4000-8000-000000000000", "1322621000000", 0x10, 0x1C, 52000, 27},
        {"GPU-a1000001-0000-4000-8000-000000000001", "1322621000001", 0x10, 0x1D, 53000, 28},
        {"GPU-a1000002-0000-4000-8000-000000000002", "1322621000002", 0x20, 0x1C, 54000, 28},
        {"GPU-a1000003-0000-4000-8000-000000000003", "1322621000003", 0x20, 0x1D, 55000, 29},
        {"GPU-a1000004-0000-4000-8000-000000000004", "1322621000004", 0x90, 0x1C, 56000, 29},
        {"GPU-a1000005-0000-4000-8000-000000000005", "1322621000005", 0x90, 0x1D, 57000, 30},
        {"GPU-a1000006-0000-4000-8000-000000000006", "1322621000006", 0xA0, 0x1C, 58000, 30},
        {"GPU-a1000007-0000-4000-8000-000000000007", "1322621000007", 0xA0, 0x1D, 59000, 31},
    },
};

static struct fake_device devices[MAX_GPUS];
static const preset *active = &P5;
static int initialized = 0;
static unsigned int gpu_count = MAX_GPUS;
static int lost_gpu = -1;
static char not_supported[512];
static char fail_call[512];
static unsigned int util_gpu = 0;
static unsigned long long dbe_volatile = 0;
static unsigned int processes = 0;
static double t0_s = 0;

/* Call counters: one slot per distinct function name. */
#define MAX_COUNTERS 64
static const char *counter_names[MAX_COUNTERS];
static int counter_values[MAX_COUNTERS];
static int counter_used = 0;

static void count_call(const char *fn) {
  for (int i = 0; i < counter_used; i++) {
    if (counter_names[i] == fn || strcmp(counter_names[i], fn) == 0) {
      counter_values[i]++;
      return;
    }
  }
  if (counter_used < MAX_COUNTERS) {
    counter_names[counter_used] = fn;
    counter_values[counter_used] = 1;
    counter_used++;
  }
}

/** Calls of `fn` since the last nvmlInit_v2 (test helper, not NVML). */
int fakeNvmlCallCount(const char *fn) {
  for (int i = 0; i < counter_used; i++) {
    if (strcmp(counter_names[i], fn) == 0) return counter_values[i];
  }
  return 0;
}

/** Makes GPU `index` answer GPU_IS_LOST from now on; -1 heals every GPU (test helper, not NVML). */
void fakeNvmlSetLostGpu(int index) { lost_gpu = index; }

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

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long long env_ull(const char *name, unsigned long long fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') return fallback;
  return strtoull(v, NULL, 10);
}

static void env_str(const char *name, char *out, size_t size) {
  const char *v = getenv(name);
  snprintf(out, size, "%s", v ? v : "");
}

static unsigned int power_mw(int i) {
  const gpu_row *g = &active->gpus[i];
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

/* ---------------------------------------------------------------- lifecycle, system */

nvmlReturn_t nvmlInit_v2(void) {
  counter_used = 0;
  count_call("nvmlInit_v2");
  const char *fail = getenv("FAKE_NVML_INIT_FAIL");
  if (fail != NULL && *fail != '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
  const char *p = getenv("FAKE_NVML_PRESET");
  active = (p != NULL && strcmp(p, "p4d") == 0) ? &P4D : &P5;
  gpu_count = (unsigned int)env_ull("FAKE_NVML_GPU_COUNT", MAX_GPUS);
  if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
  const char *lost = getenv("FAKE_NVML_LOST_GPU");
  lost_gpu = (lost != NULL && *lost != '\0') ? atoi(lost) : -1;
  env_str("FAKE_NVML_NOT_SUPPORTED", not_supported, sizeof not_supported);
  env_str("FAKE_NVML_FAIL_CALL", fail_call, sizeof fail_call);
  util_gpu = (unsigned int)env_ull("FAKE_NVML_UTIL_GPU", 0);
  if (util_gpu > 100) util_gpu = 100;
  dbe_volatile = env_ull("FAKE_NVML_DBE_VOLATILE", 0);
  processes = (unsigned int)env_ull("FAKE_NVML_PROCESSES", 0);
  for (int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
  t0_s = monotonic_s();
  initialized = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  count_call("nvmlShutdown");
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  initialized = 0;
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
  return copy_string(active->gpus[device->index].uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length) {
  ENTER_DEVICE("nvmlDeviceGetSerial", device);
  return copy_string(active->gpus[device->index].serial, serial, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  ENTER_DEVICE("nvmlDeviceGetPciInfo_v3", device);
  if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  const gpu_row *g = &active->gpus[device->index];
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:%02X.0", g->bus, g->dev);
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:%02X.0", g->bus, g->dev);
  pci->domain = 0;
  pci->bus = g->bus;
  pci->device = g->dev;
  pci->pciDeviceId = active->pci_device_id;
  pci->pciSubSystemId = active->pci_subsystem_id;
  return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- metrics */

static unsigned long long used_bytes(void) {
  return (active->reserved_mib + (unsigned long long)processes * 1024ULL) << 20;
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
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
  utilization->gpu = util_gpu;
  utilization->memory = util_gpu / 2;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType, unsigned int *temp) {
  ENTER_DEVICE("nvmlDeviceGetTemperature", device);
  if (temp == NULL || sensorType != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = active->gpus[device->index].temp_c + util_gpu / 4;
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
    infos[i].usedGpuMemory = 1024ULL << 20;
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
