job "report" {
  type = "batch"

  periodic {
    cron             = "@daily"
    prohibit_overlap = true
  }

  group "report" {
    task "report" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/report"
      }
    }
  }
}
