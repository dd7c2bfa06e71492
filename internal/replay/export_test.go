package replay

// TakeOverNormalForms is takeOverNormalForms, for the tests of package
// replay_test.
var TakeOverNormalForms = &takeOverNormalForms
