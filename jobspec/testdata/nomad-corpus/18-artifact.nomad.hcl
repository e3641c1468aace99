job "binary-download" {
  datacenters = ["dc1"]

  group "app" {
    task "app" {
      driver = "exec"

      artifact {
        source      = "https://example.com/releases/app_1.0.0_linux_amd64.tar.gz"
        destination = "local/bin"

        options {
          checksum = "sha256:4f2c3e0a6e0b6a1c7f6f8a2ec7b3f5d10a0d6c5c6f4a1f3d2e9b8a7c6d5e4f3a"
        }
      }

      config {
        command = "local/bin/app"
      }
    }
  }
}
