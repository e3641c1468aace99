# Reschedule policies: the job's applies to every group, a group's block
# overrides it field by field.
job "retry" {
  type        = "batch"
  datacenters = ["dc1"]

  reschedule {
    attempts       = 3
    interval       = "2h"
    delay          = "10s"
    delay_function = "exponential"
    max_delay      = "5m"
  }

  # Inherits the job's policy as is.
  group "inherit" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }

  # Overrides two fields; the rest comes from the job's block.
  group "override" {
    reschedule {
      delay_function = "fibonacci"
      unlimited      = true
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
