job "broken" {
  type = "batch"
  group "g" {
    count =
  }
}
