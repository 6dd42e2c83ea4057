use reflector::Reflect;

#[derive(Reflect)]
pub struct Widget(String);

fn main() {}
