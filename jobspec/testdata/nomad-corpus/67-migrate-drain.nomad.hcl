job "cache" {
  datacenters = ["dc1"]
  all_at_once = false

  migrate {
    max_parallel     = 1
    health_check     = "checks"
    min_healthy_time = "10s"
    healthy_deadline = "5m"
  }

  group "cache" {
    count = 3

    migrate {
      max_parallel = 2
    }

    task "redis" {
      driver = "docker"

      config {
        image = "redis:7"
      }
    }
  }
}
