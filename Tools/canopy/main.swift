import CanopyCLI

// The `canopy` tool: all the logic is in CanopyCLI, so that tests run the commands in-process.
await CanopyCLI.main()
