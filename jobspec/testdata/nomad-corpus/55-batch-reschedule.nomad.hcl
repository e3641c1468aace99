job "retrying" {
  type = "batch"

  group "g" {
    reschedule {
      attempts  = 3
      interval  = "24h"
      delay     = "10s"
      unlimited = false
    }

    restart {
      attempts = 1
      delay    = "5s"
      mode     = "fail"
    }

    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/false"
      }
    }
  }
}
