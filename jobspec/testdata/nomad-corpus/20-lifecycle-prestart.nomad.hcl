job "migrate-then-serve" {
  datacenters = ["dc1"]

  group "app" {
    task "migrate" {
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }

      driver = "docker"

      config {
        image   = "example/app:2.0"
        command = "migrate"
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = "example/app:2.0"
      }
    }
  }
}
