# want: Consul
job "consul-svc" {
  datacenters = ["dc1"]

  group "g" {
    network {
      port "http" {}
    }

    service {
      name     = "web"
      port     = "http"
      provider = "consul"
    }

    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
        ports = ["http"]
      }
    }
  }
}
