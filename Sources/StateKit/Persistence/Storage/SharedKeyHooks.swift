/// Points where StateKit's own fault tests stop a child process (`statekit-testhelper`, which
/// sets them from its environment at launch); apps never set them, and they are not public API.
package enum SharedKeyHooks {
    /// Called by a commit over several shared keys once it replaced its first file, holding every
    /// key: a test kills the process there. Set before any container is made.
    package nonisolated(unsafe) static var afterFirstReplace: (() -> Void)?
}
