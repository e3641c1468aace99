job "legacy-net" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
        ports = ["http"]
      }

      resources {
        cpu    = 100
        memory = 64

        network {
          port "http" {}
        }
      }
    }
  }
}
