job "important" {
  datacenters = ["dc1"]
  namespace   = "default"
  priority    = 80
  region      = "global"

  group "g" {
    task "t" {
      driver = "docker"

      config {
        image = "busybox:1.36"
        args  = ["sleep", "3600"]
      }
    }
  }
}
