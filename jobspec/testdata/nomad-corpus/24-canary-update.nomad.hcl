job "api-canary" {
  datacenters = ["dc1"]

  update {
    max_parallel      = 1
    canary            = 1
    min_healthy_time  = "10s"
    healthy_deadline  = "5m"
    progress_deadline = "10m"
    auto_revert       = true
    auto_promote      = false
  }

  group "api" {
    count = 3

    task "api" {
      driver = "docker"

      config {
        image = "example/api:1.1"
      }
    }
  }
}
