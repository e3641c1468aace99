job "docs" {
  datacenters = ["dc1"]

  ui {
    description = "Internal **documentation** site"

    link {
      label = "Learn more about Nomad"
      url   = "https://developer.hashicorp.com/nomad"
    }

    link {
      label = "Source"
      url   = "https://github.com/example/docs"
    }
  }

  group "docs" {
    task "server" {
      driver = "docker"

      config {
        image = "nginx:1.27"
      }
    }
  }
}
