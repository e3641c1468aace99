job "nginx-templated" {
  datacenters = ["dc1"]

  group "nginx" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "nginx" {
      driver = "docker"

      config {
        image   = "nginx:1.25"
        ports   = ["http"]
        volumes = ["local/nginx.conf:/etc/nginx/conf.d/default.conf"]
      }

      template {
        data          = <<EOF
server {
  listen 8080;
  location / {
    return 200 "alloc {{ env "NOMAD_ALLOC_ID" }}";
  }
}
EOF
        destination   = "local/nginx.conf"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }
    }
  }
}
