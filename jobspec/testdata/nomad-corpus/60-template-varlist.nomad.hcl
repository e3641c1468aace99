job "var-list" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "exec"

      config {
        command = "/usr/local/bin/app"
      }

      template {
        data        = <<EOT
{{ range nomadVarList "nomad/jobs/var-list" }}
{{ .Path }}
{{ end }}
EOT
        destination = "local/paths.txt"
      }
    }
  }
}
