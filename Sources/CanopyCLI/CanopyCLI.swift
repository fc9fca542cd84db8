import ArgumentParser
public enum CanopyCLI { public static func main() async {} }
