job "postgres" {
  datacenters = ["dc1"]

  group "db" {
    network {
      port "pg" {
        static = 5432
      }
    }

    service {
      name     = "postgres"
      port     = "pg"
      provider = "nomad"

      check {
        name     = "alive"
        type     = "tcp"
        interval = "15s"
        timeout  = "3s"
      }
    }

    task "postgres" {
      driver = "docker"

      config {
        image = "postgres:16"
        ports = ["pg"]
      }

      env {
        POSTGRES_PASSWORD = "example"
      }

      resources {
        cpu    = 1000
        memory = 1024
      }
    }
  }
}
