# A batch training job that wants two big GPUs on one NVLink domain.
job "train-llm" {
  type        = "batch"
  datacenters = ["dc1", "dc2"]
  priority    = 70
  max_run_time = "4h"

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "trainer" {
    task "train" {
      driver = "raw_exec"

      config {
        command = "/usr/bin/python3"
        args    = ["train.py", "--epochs", 3]
      }

      resources {
        cpu    = 4000
        memory = "16 GiB"

        device "nvidia/gpu" {
          count    = 2
          topology = "nvlink"

          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }

          affinity {
            attribute = "${device.model}"
            operator  = "regexp"
            value     = "H100"
            weight    = 75
          }
        }
      }

      kill_timeout = "30s"
      kill_signal  = "SIGINT"
    }
  }
}
