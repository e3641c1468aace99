job "invalid" {
  datacenters = ["dc1"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      resources {
        device "nvidia/gpu" {
          count    = 2
          topology = "ring"
        }
      }
    }
  }
}
