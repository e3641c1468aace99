job "mysql" {
  datacenters = ["dc1"]

  group "db" {
    volume "data" {
      type      = "host"
      source    = "mysql"
      read_only = false
    }

    task "mysql" {
      driver = "docker"

      volume_mount {
        volume      = "data"
        destination = "/var/lib/mysql"
        read_only   = false
      }

      config {
        image = "mysql:8.4"
      }

      env {
        MYSQL_ROOT_PASSWORD = "password"
      }

      resources {
        cpu    = 500
        memory = 1024
      }
    }
  }
}
