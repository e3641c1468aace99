job "rolling" {
  datacenters = ["dc1"]

  update {
    max_parallel     = 2
    stagger          = "30s"
    health_check     = "checks"
    min_healthy_time = "15s"
    healthy_deadline = "3m"
  }

  group "web" {
    count = 6

    task "web" {
      driver = "docker"

      config {
        image = "nginx:1.25"
      }
    }
  }
}
