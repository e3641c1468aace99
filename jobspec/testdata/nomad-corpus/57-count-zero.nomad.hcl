job "standby" {
  datacenters = ["dc1"]

  group "g" {
    count = 0

    task "t" {
      driver = "docker"

      config {
        image = "nginx:1.25"
      }
    }
  }
}
