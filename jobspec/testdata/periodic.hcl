job "report" {
  datacenters = ["dc1"]
  type        = "batch"

  periodic {
    crons            = ["*/15 * * * *", "0 3 * * 1"]
    prohibit_overlap = true
    time_zone        = "America/New_York"
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
