# want: CSI
job "csi-user" {
  datacenters = ["dc1"]

  group "g" {
    volume "ebs" {
      type            = "csi"
      source          = "ebs-vol0"
      attachment_mode = "file-system"
      access_mode     = "single-node-writer"
    }

    task "t" {
      driver = "docker"

      volume_mount {
        volume      = "ebs"
        destination = "/data"
      }

      config {
        image = "example/app:1"
      }
    }
  }
}
