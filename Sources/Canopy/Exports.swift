@_exported import CanopyCore
