# A batch job that waits in the fair-share queue "research".
job "sweep" {
  type        = "batch"
  datacenters = ["dc1"]
  queue       = "research"

  group "trial" {
    count = 2

    task "trial" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/python3"
        args    = ["sweep.py"]
      }
      resources {
        device "nvidia/gpu" {
          count = 1
        }
      }
    }
  }
}
