job "edge-disconnect" {
  datacenters = ["edge"]

  group "g" {
    disconnect {
      lost_after = "30m"
      replace    = false
      reconcile  = "keep_original"
    }

    task "t" {
      driver = "docker"

      config {
        image = "example/edge-agent:1.0"
      }
    }
  }
}
