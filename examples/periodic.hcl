# A periodic batch job (README: Periodic jobs).
job "report" {
  datacenters = ["dc1"]
  type        = "batch"

  periodic {
    crons            = ["*/15 * * * *"]   # or: cron = "*/15 * * * *"
    prohibit_overlap = true               # skip a launch while the previous child runs
    time_zone        = "UTC"
  }

  group "report" {
    task "report" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "date; echo report for $NOMAD_JOB_ID"]
      }
    }
  }
}
