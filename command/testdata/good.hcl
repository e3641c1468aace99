job "train" {
  type        = "batch"
  datacenters = ["dc1"]

  group "train" {
    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo GPUs: $NVIDIA_VISIBLE_DEVICES"]
      }
      resources {
        cpu    = 500
        memory = 256
        device "nvidia/gpu" {
          count = 2
        }
      }
    }
  }
}
