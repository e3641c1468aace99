job "http-echo" {
  datacenters = ["dc1"]

  group "echo" {
    count = 2

    network {
      port "http" {
        static = 8080
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = "hashicorp/http-echo:latest"
        args  = ["-listen", ":8080", "-text", "hello world"]
        ports = ["http"]
      }
    }
  }
}
