job "train" {
  datacenters = ["dc1"]
  type        = "batch"

  group "trainer" {
    task "train" {
      driver = "docker"

      config {
        image   = "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"
        command = "python"
        args    = ["-c", "import torch; print(torch.cuda.device_count())"]
      }

      resources {
        cpu    = 8000
        memory = 65536

        device "nvidia/gpu" {
          count = 8

          affinity {
            attribute = "${device.model}"
            value     = "NVIDIA H100 80GB HBM3"
            weight    = 100
          }
        }
      }
    }
  }
}
