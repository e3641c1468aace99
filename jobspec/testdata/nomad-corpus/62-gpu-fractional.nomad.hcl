job "notebook" {
  datacenters = ["dc1"]

  group "g" {
    task "jupyter" {
      driver = "docker"

      config {
        image = "jupyter/base-notebook:latest"
      }

      resources {
        cpu    = 1000
        memory = 4096

        device "nvidia/gpu" {
          count   = 1
          memory  = "10 GiB"
          compute = 25
        }
      }
    }
  }
}
