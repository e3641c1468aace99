job "mixed-update" {
  datacenters = ["dc1"]

  update {
    max_parallel     = 1
    min_healthy_time = "10s"
  }

  group "fast" {
    count = 4

    update {
      max_parallel = 4
    }

    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
      }
    }
  }

  group "slow" {
    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
      }
    }
  }
}
