# want: Consul
job "consul-ns" {
  datacenters = ["dc1"]

  group "g" {
    consul {
      namespace = "prod"
    }

    task "t" {
      driver = "docker"

      config {
        image = "example/app:1"
      }
    }
  }
}
