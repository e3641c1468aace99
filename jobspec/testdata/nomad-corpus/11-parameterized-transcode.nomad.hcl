job "video-transcode" {
  datacenters = ["dc1"]
  type        = "batch"

  parameterized {
    payload       = "required"
    meta_required = ["input", "profile"]
    meta_optional = ["priority"]
  }

  group "transcode" {
    task "ffmpeg" {
      driver = "docker"

      config {
        image = "jrottenberg/ffmpeg:6.1-ubuntu"
        args  = ["-i", "${NOMAD_META_input}", "-preset", "${NOMAD_META_profile}", "/local/out.mp4"]
      }

      dispatch_payload {
        file = "config.json"
      }

      resources {
        cpu    = 2000
        memory = 2048
      }
    }
  }
}
