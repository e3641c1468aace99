job "private-image" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "docker"

      config {
        image = "registry.example.com/team/app:1.2.3"

        auth {
          username = "robot"
          password = "token"
        }

        labels {
          team = "platform"
        }
      }
    }
  }
}
