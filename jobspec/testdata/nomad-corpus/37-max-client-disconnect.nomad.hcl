job "edge" {
  datacenters = ["edge"]

  group "g" {
    max_client_disconnect = "1h"

    task "t" {
      driver = "docker"

      config {
        image = "example/edge-agent:1.0"
      }
    }
  }
}
