package broken

func F() int { return undefinedThing }
