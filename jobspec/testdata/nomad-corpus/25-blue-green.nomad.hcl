job "docs" {
  datacenters = ["dc1"]

  group "docs" {
    count = 3

    update {
      max_parallel     = 3
      canary           = 3
      health_check     = "task_states"
      min_healthy_time = "30s"
      healthy_deadline = "5m"
      auto_revert      = true
      auto_promote     = true
    }

    task "server" {
      driver = "docker"

      config {
        image = "example/docs:2.0"
      }
    }
  }
}
