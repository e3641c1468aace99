job "sidecars" {
  datacenters = ["dc1"]

  group "app" {
    task "log-shipper" {
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }

      driver = "docker"

      config {
        image = "fluent/fluent-bit:3.0"
      }
    }

    task "main" {
      driver = "docker"

      config {
        image = "example/app:1.0"
      }
    }

    task "announce" {
      lifecycle {
        hook = "poststart"
      }

      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo started ${NOMAD_ALLOC_ID}"]
      }
    }

    task "cleanup" {
      lifecycle {
        hook = "poststop"
      }

      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo done"]
      }
    }
  }
}
