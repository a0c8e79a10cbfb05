@_exported import StateKit
