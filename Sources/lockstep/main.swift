import LockstepCLI

@main
extension LockstepCommand {}
