job "flaky" {
  datacenters = ["dc1"]

  group "g" {
    restart {
      attempts = 3
      interval = "5m"
      delay    = "15s"
      mode     = "delay"
    }

    reschedule {
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "1h"
      unlimited      = true
    }

    task "t" {
      driver = "exec"

      config {
        command = "/usr/local/bin/flaky"
      }
    }
  }
}
