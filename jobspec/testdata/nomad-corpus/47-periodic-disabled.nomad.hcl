job "paused-cron" {
  type = "batch"

  periodic {
    crons   = ["*/15 * * * *"]
    enabled = false
  }

  group "g" {
    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/date"
      }
    }
  }
}
