job "notebook" {
  datacenters = ["dc1"]

  group "nb" {
    task "jupyter" {
      driver = "raw_exec"
      config {
        command = "jupyter"
      }
      resources {
        cpu    = 1000
        memory = "1.5 GiB"

        device "nvidia/gpu/H100 80GB HBM3" {
          memory  = "20 GiB"
          compute = 25
        }

        device "gpu" {
          memory  = 4096
          compute = "10%"
        }
      }
    }
  }
}
