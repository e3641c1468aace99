job "gpu-hello" {
  type        = "batch"
  datacenters = ["dc1"]

  group "train" {
    task "hello" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo running on GPUs $NVIDIA_VISIBLE_DEVICES"]
      }
      resources {
        cpu    = 500
        memory = 256
        device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }
        }
      }
    }
  }
}
