job "even" {
  datacenters = ["dc1"]

  group "g" {
    count = 6

    spread {
      attribute = "${node.unique.id}"
      weight    = 100
    }

    task "t" {
      driver = "docker"

      config {
        image = "busybox:1.36"
        args  = ["sleep", "infinity"]
      }
    }
  }
}
