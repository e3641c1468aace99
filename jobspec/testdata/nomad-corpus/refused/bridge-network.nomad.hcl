# want: bridge
job "bridged" {
  datacenters = ["dc1"]

  group "g" {
    network {
      mode = "bridge"

      port "http" {
        to = 8080
      }
    }

    task "t" {
      driver = "docker"

      config {
        image = "example/app:1"
        ports = ["http"]
      }
    }
  }
}
