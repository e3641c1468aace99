# A distributed training job: 4 workers and 1 parameter server, placed
# together or not at all.
job "ddp" {
  type        = "batch"
  datacenters = ["dc1"]
  priority    = 70
  preemptible = false

  group "worker" {
    count = 4

    gang {
      name    = "ddp"
      min     = 4
      timeout = "15m"

      # all workers in one rack, or wait
      network {
        level = "rack"
        mode  = "required"
      }
    }

    task "train" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/torchrun"
      }
      resources {
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }

  group "ps" {
    gang {
      name = "ddp"
      min  = 1

      network {
        level = "rack"
      }
    }

    task "ps" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/ps-server"
      }
    }
  }
}
