job "backup" {
  datacenters = ["dc1"]
  type        = "batch"

  periodic {
    crons            = ["0 */6 * * *"]
    prohibit_overlap = true
    time_zone        = "America/New_York"
  }

  group "backup" {
    task "dump" {
      driver = "docker"

      config {
        image   = "postgres:16"
        command = "pg_dumpall"
      }
    }
  }
}
