# Packer: bake the gpu-sentinel agent into a GPU AMI (amazon-ebs builder).
# Build the tarball first: npx tsx agent/packaging/build.ts --sea --tarball --arch x64|arm64
# (dist/gpu-sentinel-agent-<version>-linux-<arch>.tar.gz: the single executable, Node.js inside; the
# AMI needs no runtime). Give the tarball of the AMI's architecture: linux-x64 for x86 GPU instances,
# linux-arm64 for Graviton (g5g) and Grace (p6e); install.sh refuses another.
# A100 AMIs (p4d, p4de: no NVML GPM): set gpu_sentinel_dcgm_exporter_image to also install
# dcgm-exporter with the DCGM profiling counters (needs Docker and the NVIDIA Container Toolkit).

variable "gpu_sentinel_bundle" {
  type        = string
  description = "Path of gpu-sentinel-agent-<version>-linux-<arch>.tar.gz on the Packer host, <arch> the AMI's (x64 or arm64)"
}

variable "gpu_sentinel_endpoint" {
  type        = string
  default     = ""
  description = "API stage URL written into /etc/gpu-sentinel/agent.json (empty: set it at boot, e.g. user data)"
}

variable "gpu_sentinel_dcgm_exporter_image" {
  type        = string
  default     = ""
  description = "dcgm-exporter image pinned by tag or digest, e.g. nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04 (empty: no exporter; H100 and newer have GPM)"
}

build {
  # sources = ["source.amazon-ebs.gpu"]

  provisioner "file" {
    source      = var.gpu_sentinel_bundle
    destination = "/tmp/gpu-sentinel-agent.tar.gz"
  }

  provisioner "shell" {
    environment_vars = [
      "GPU_SENTINEL_ENDPOINT_URL=${var.gpu_sentinel_endpoint}",
      "GPU_SENTINEL_DCGM_EXPORTER_IMAGE=${var.gpu_sentinel_dcgm_exporter_image}",
    ]
    execute_command  = "chmod +x {{ .Path }}; sudo -E bash '{{ .Path }}'"
    inline = [
      "set -euo pipefail",
      "mkdir -p /tmp/gpu-sentinel && tar -xzf /tmp/gpu-sentinel-agent.tar.gz -C /tmp/gpu-sentinel",
      "/tmp/gpu-sentinel/agent/install.sh $${GPU_SENTINEL_ENDPOINT_URL:+--endpoint \"$GPU_SENTINEL_ENDPOINT_URL\"}",
      "gpu-sentinel-agent --version",
      "systemctl is-enabled gpu-sentinel-agent.service",
      "if [ -n \"$GPU_SENTINEL_DCGM_EXPORTER_IMAGE\" ]; then /tmp/gpu-sentinel/agent/install-dcgm-exporter.sh --image \"$GPU_SENTINEL_DCGM_EXPORTER_IMAGE\" && systemctl is-enabled dcgm-exporter.service; fi",
      "rm -rf /tmp/gpu-sentinel /tmp/gpu-sentinel-agent.tar.gz",
    ]
  }
}
